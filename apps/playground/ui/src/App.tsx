// The playground's pages and the frame around them: a left navigation and the page.

import { NavLink, Navigate, Outlet, Route, Routes } from "react-router";
import { AgentHistoryRoute } from "./agents/AgentHistoryPage";
import { AgentsPage } from "./agents/AgentsPage";
import { NewAgentPage } from "./agents/NewAgentPage";
import { getHealth } from "./api/client";
import { ChatRoute } from "./chat/ChatPage";
import { useResource } from "./hooks/useResource";
import { RunRoute } from "./runs/RunPage";
import { RunsPage } from "./runs/RunsPage";

export function App() {
  return (
    <Routes>
      <Route element={<Frame />}>
        <Route index element={<Navigate to="/agents" replace />} />
        <Route path="agents" element={<AgentsPage />} />
        <Route path="agents/new" element={<NewAgentPage />} />
        <Route path="agents/:name" element={<AgentHistoryRoute />} />
        <Route path="chat/:agent" element={<ChatRoute />} />
        <Route path="chat/:agent/:runId" element={<ChatRoute />} />
        <Route path="runs" element={<RunsPage />} />
        <Route path="runs/:runId" element={<RunRoute />} />
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}

function Frame() {
  const health = useResource(getHealth);
  return (
    <div className="frame">
      <nav className="side">
        <div className="brand">Psych playground</div>
        <NavLink to="/agents" data-testid="nav-agents">
          Agents
        </NavLink>
        <NavLink to="/runs" data-testid="nav-runs">
          Runs
        </NavLink>
        <div className="side-foot">
          {health.data ? (
            <>
              <div>store: {health.data.store}</div>
              <div>model: {health.data.model}</div>
              <div>live text: {health.data.live_text ? "yes" : "no"}</div>
            </>
          ) : (
            <div>{health.error ? "server not reachable" : "connecting…"}</div>
          )}
          <div className="warn">An example, not for the internet.</div>
        </div>
      </nav>
      <main className="page">
        <Outlet />
      </main>
    </div>
  );
}

function NotFound() {
  return (
    <div>
      <h1>Not found</h1>
      <p className="muted">There is no page here.</p>
    </div>
  );
}
