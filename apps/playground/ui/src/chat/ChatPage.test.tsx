import { act, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { MemoryRouter, Route, Routes } from "react-router";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { RunDetail, RunStatus, ThreadMessage } from "../api/types";
import { FakeEventSource, fakeFetch } from "../test/fakes";
import { ChatRoute } from "./ChatPage";

const STATUS: RunStatus = {
  run_id: "r2",
  agent: "support",
  status: "running",
  waiting: null,
  waiting_for: [],
  due_at: null,
  questions: [],
  turns: 0,
  model_calls: 0,
  tool_calls: 0,
  attempt: 1,
  last_seq: 1,
  failure_reason: null,
  error: null,
};

function detail(status: Partial<RunStatus>, extra: Partial<RunDetail> = {}): RunDetail {
  return {
    summary: {
      run_id: "r2",
      agent: "support",
      spec_version: "sha256:abc",
      status: status.status ?? "running",
      waiting: null,
      attempt: 1,
      parent_run_id: null,
      created_at: "2026-03-01T10:00:00Z",
      updated_at: "2026-03-01T10:00:00Z",
      lease_expires_at: null,
      stuck: null,
    },
    status: { ...STATUS, ...status },
    kind: "agent",
    continues: null,
    continued_by: null,
    ...extra,
  };
}

const USER: ThreadMessage = { role: "user", text: "hello there", run_id: "r2", seq: 0 };

function renderChat() {
  return render(
    <MemoryRouter initialEntries={["/chat/support/r2"]}>
      <Routes>
        <Route path="/chat/:agent/:runId" element={<ChatRoute />} />
      </Routes>
    </MemoryRouter>,
  );
}

const sources = (path: string) => FakeEventSource.instances.filter((s) => s.url.startsWith(path));

describe("the chat", () => {
  beforeEach(() => FakeEventSource.install());
  afterEach(() => vi.unstubAllGlobals());

  it("shows the words as they are written, then the message for good", async () => {
    fakeFetch((url) => {
      if (url.pathname === "/api/runs/r2") return { body: detail({}) };
      if (url.pathname === "/api/runs/r2/thread") return { body: { runs: ["r2"], messages: [USER] } };
      if (url.pathname === "/api/runs/r2/log") return { body: { records: [], next_after: null, last_seq: 1 } };
      return undefined;
    });
    renderChat();
    await screen.findByText("hello there");
    const text = sources("/api/runs/r2/text")[0]!;
    expect(text.url).toBe("/api/runs/r2/text?after=-1");

    act(() => {
      text.emit("text", { kind: "delta", run_id: "r2", seq: 2, text: "You said: " });
      text.emit("text", { kind: "delta", run_id: "r2", seq: 2, text: "hello" });
    });
    expect(screen.getByTestId("live-text").textContent).toBe("You said: hello");
    expect(document.querySelectorAll('[data-role="assistant"][data-testid="chat-message"]')).toHaveLength(0);

    act(() => text.emit("text", { kind: "final", run_id: "r2", seq: 2, text: "You said: hello there" }, "2"));
    expect(screen.queryByTestId("live-text")).toBeNull();
    const messages = screen.getAllByTestId("chat-message");
    expect(messages.map((m) => [m.dataset.role, m.dataset.runId, m.textContent])).toEqual([
      ["user", "r2", "hello there"],
      ["assistant", "r2", "You said: hello there"],
    ]);
    expect(screen.getByTestId("chat-run-link").getAttribute("href")).toBe("/runs/r2");
    expect(screen.getByTestId("chat-status").textContent).toBe("running");
  });

  it("approves a waiting call with edited arguments", async () => {
    const calls = fakeFetch((url, init) => {
      if (url.pathname === "/api/runs/r2") {
        return {
          body: detail(
            { status: "waiting", waiting: "approval", waiting_for: ["3.0"] },
            { approvals: [{ call_id: "3.0", tool: "refund", arguments: { order_id: "A1", amount: 500 }, rule: "amount gt 100" }] },
          ),
        };
      }
      if (url.pathname === "/api/runs/r2/thread") return { body: { runs: ["r2"], messages: [USER] } };
      if (url.pathname === "/api/runs/r2/log") return { body: { records: [], next_after: null, last_seq: 4 } };
      if (url.pathname === "/api/runs/r2/approvals/3.0" && init?.method === "POST") return { status: 202, body: { seq: 5 } };
      return undefined;
    });
    renderChat();
    const card = await screen.findByTestId("approval-card");
    expect(card.dataset.callId).toBe("3.0");
    expect(screen.getByTestId("approval-tool").textContent).toBe("refund");
    expect(JSON.parse(screen.getByTestId("approval-arguments").textContent ?? "")).toEqual({ order_id: "A1", amount: 500 });
    expect(screen.getByTestId("chat-status").textContent).toBe("waiting");

    fireEvent.change(screen.getByTestId("edit-arguments"), { target: { value: "not json" } });
    fireEvent.click(screen.getByTestId("approve-edited-button"));
    expect(screen.getByRole("alert").textContent).toMatch(/not JSON/);

    fireEvent.change(screen.getByTestId("edit-arguments"), { target: { value: '{"order_id": "A1", "amount": 400}' } });
    fireEvent.click(screen.getByTestId("approve-edited-button"));
    await waitFor(() => expect(calls.some((c) => c.url.pathname === "/api/runs/r2/approvals/3.0")).toBe(true));
    const sent = calls.find((c) => c.url.pathname === "/api/runs/r2/approvals/3.0")!;
    expect(JSON.parse(sent.init!.body as string)).toEqual({
      approve: true,
      by: "playground",
      note: null,
      arguments: { order_id: "A1", amount: 400 },
    });
    await screen.findByText("approved with edited arguments");
  });

  it("answers a question with one of its options", async () => {
    const calls = fakeFetch((url, init) => {
      if (url.pathname === "/api/runs/r2") {
        return {
          body: detail({
            status: "waiting",
            waiting: "external",
            waiting_for: ["2.0"],
            questions: [{ call_id: "2.0", question: "Refund it?", options: ["yes", "no"] }],
          }),
        };
      }
      if (url.pathname === "/api/runs/r2/thread") return { body: { runs: ["r2"], messages: [USER] } };
      if (url.pathname === "/api/runs/r2/log") return { body: { records: [], next_after: null, last_seq: 3 } };
      if (url.pathname === "/api/runs/r2/answers/2.0" && init?.method === "POST") return { status: 202, body: { seq: 4 } };
      return undefined;
    });
    renderChat();
    const card = await screen.findByTestId("question-card");
    expect(card.dataset.callId).toBe("2.0");
    expect(screen.getByTestId("question-text").textContent).toBe("Refund it?");
    const options = screen.getAllByTestId("answer-option");
    expect(options.map((o) => o.textContent)).toEqual(["yes", "no"]);
    expect(screen.queryByTestId("answer-input")).toBeNull();
    fireEvent.click(options[1]!);
    await screen.findByText("no", { selector: "span" });
    const sent = calls.find((c) => c.url.pathname === "/api/runs/r2/answers/2.0")!;
    expect(JSON.parse(sent.init!.body as string)).toEqual({ answer: "no" });
  });
});
