import { act, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { LogRecord } from "../api/types";
import { FakeEventSource, fakeFetch } from "../test/fakes";
import { useRunRecords } from "./useRunRecords";

const rec = (seq: number): LogRecord => ({
  run_id: "r1",
  seq,
  attempt: 1,
  at: "2026-03-01T10:00:00Z",
  body: { type: `type${seq}` },
});

function Probe() {
  const live = useRunRecords("r1");
  return (
    <div>
      <span data-testid="seqs">{live.records.slice(0, live.shown).map((r) => r.seq).join(",")}</span>
      <span data-testid="last">{live.lastSeq}</span>
      <span data-testid="live">{String(live.live)}</span>
      <span data-testid="ended">{live.ended ?? ""}</span>
      <span data-testid="more">{String(live.hasMore)}</span>
      <button type="button" onClick={live.loadMore}>
        more
      </button>
    </div>
  );
}

async function flush() {
  await act(async () => {
    await vi.advanceTimersByTimeAsync(100);
  });
}

describe("useRunRecords", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeEventSource.install();
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it("loads the log, then follows the stream after its last seq, each record once", async () => {
    const calls = fakeFetch((url) =>
      url.pathname === "/api/runs/r1/log"
        ? { body: { records: [rec(0), rec(1), rec(2)], next_after: null, last_seq: 2 } }
        : undefined,
    );
    render(<Probe />);
    await flush();
    expect(calls[0]!.url.search).toBe("?after=-1&limit=200");
    expect(screen.getByTestId("seqs").textContent).toBe("0,1,2");
    const source = FakeEventSource.instances[0]!;
    expect(source.url).toBe("/api/runs/r1/events?after=2");

    act(() => source.open());
    expect(screen.getByTestId("live").textContent).toBe("true");

    // A reconnect resends a record, and two arrive out of order.
    act(() => {
      source.emit("record", rec(2), "2");
      source.emit("record", rec(4), "4");
      source.emit("record", rec(3), "3");
      source.emit("record", rec(4), "4");
    });
    await flush();
    expect(screen.getByTestId("seqs").textContent).toBe("0,1,2,3,4");
    expect(screen.getByTestId("last").textContent).toBe("4");

    act(() => source.emit("end", { status: "completed" }));
    expect(source.readyState).toBe(FakeEventSource.CLOSED);
    expect(screen.getByTestId("live").textContent).toBe("false");
    expect(screen.getByTestId("ended").textContent).toBe("completed");
  });

  it("pages older records in, and shows live ones only once the history reaches them", async () => {
    const page = (after: number) => {
      const records = [];
      for (let seq = after + 1; seq <= Math.min(after + 200, 449); seq++) records.push(rec(seq));
      return { records, next_after: after + 200 < 449 ? after + 200 : null, last_seq: 449 };
    };
    const calls = fakeFetch((url) =>
      url.pathname === "/api/runs/r1/log" ? { body: page(Number(url.searchParams.get("after"))) } : undefined,
    );
    render(<Probe />);
    await flush();
    const source = FakeEventSource.instances[0]!;
    expect(source.url).toBe("/api/runs/r1/events?after=449");
    act(() => source.emit("record", rec(450), "450"));
    await flush();
    expect(screen.getByTestId("seqs").textContent.split(",")).toHaveLength(200);
    expect(screen.getByTestId("last").textContent).toBe("450");
    expect(screen.getByTestId("more").textContent).toBe("true");

    act(() => screen.getByText("more").click());
    await flush();
    expect(calls[1]!.url.searchParams.get("after")).toBe("199");
    act(() => screen.getByText("more").click());
    await flush();
    const shown = screen.getByTestId("seqs").textContent.split(",").map(Number);
    expect(shown).toEqual(Array.from({ length: 451 }, (_, i) => i));
    expect(screen.getByTestId("more").textContent).toBe("false");
  });

  it("says why when the log cannot be read", async () => {
    fakeFetch(() => ({ status: 404, body: { detail: "run r1 not found" } }));
    function ErrorProbe() {
      return <span data-testid="error">{useRunRecords("r1").error}</span>;
    }
    render(<ErrorProbe />);
    await flush();
    expect(screen.getByTestId("error").textContent).toBe("run r1 not found");
    expect(FakeEventSource.instances).toHaveLength(0);
  });
});
