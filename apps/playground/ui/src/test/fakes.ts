// Test doubles for the browser's network: a fetch that answers from a table of routes, and an
// EventSource the test drives by hand.

import { vi } from "vitest";

type Route = (url: URL, init: RequestInit | undefined) => { status?: number; body: unknown } | undefined;

/** Replace fetch: each call is answered by the first route that returns an answer. */
export function fakeFetch(...routes: Route[]) {
  const calls: { url: URL; init: RequestInit | undefined }[] = [];
  const fetch = vi.fn((input: RequestInfo | URL, init?: RequestInit) => {
    const href = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const url = new URL(href, "http://playground.test");
    calls.push({ url, init });
    for (const route of routes) {
      const answer = route(url, init);
      if (answer) {
        return Promise.resolve(
          new Response(JSON.stringify(answer.body), {
            status: answer.status ?? 200,
            headers: { "Content-Type": "application/json" },
          }),
        );
      }
    }
    return Promise.resolve(new Response(JSON.stringify({ detail: `no route for ${url.pathname}` }), { status: 404 }));
  });
  vi.stubGlobal("fetch", fetch);
  return calls;
}

export class FakeEventSource {
  static instances: FakeEventSource[] = [];
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSED = 2;
  readonly url: string;
  readyState = FakeEventSource.CONNECTING;
  onopen: ((event: Event) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  private listeners = new Map<string, ((event: MessageEvent<string>) => void)[]>();

  constructor(url: string) {
    this.url = url;
    FakeEventSource.instances.push(this);
  }

  addEventListener(type: string, listener: (event: MessageEvent<string>) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  close() {
    this.readyState = FakeEventSource.CLOSED;
  }

  /** The server: the stream is connected. */
  open() {
    this.readyState = FakeEventSource.OPEN;
    this.onopen?.(new Event("open"));
  }

  /** The server: one event. */
  emit(type: string, data: unknown, id?: string) {
    const event = new MessageEvent<string>(type, { data: JSON.stringify(data), lastEventId: id ?? "" });
    for (const listener of this.listeners.get(type) ?? []) listener(event);
  }

  static install() {
    FakeEventSource.instances = [];
    vi.stubGlobal("EventSource", FakeEventSource);
  }
}
