import { describe, expect, it } from "vitest";
import { EMPTY_QUERY, parseRunsQuery, runsApiParams, runsSearchParams, withFilter } from "./runsQuery";

describe("the runs list's query string", () => {
  it("round-trips every filter", () => {
    const query = {
      agent: "support team",
      status: "waiting",
      waiting: "approval" as const,
      failed: true,
      stuck: true,
      q: "01J",
      cursor: "eyJhIjoxfQ==",
    };
    const text = runsSearchParams(query).toString();
    expect(text).toBe("agent=support+team&status=waiting&waiting=approval&failed=true&stuck=true&q=01J&cursor=eyJhIjoxfQ%3D%3D");
    expect(parseRunsQuery(new URLSearchParams(text))).toEqual(query);
  });

  it("writes nothing for filters that are not set, and reads defaults from nothing", () => {
    expect(runsSearchParams(EMPTY_QUERY).toString()).toBe("");
    expect(parseRunsQuery(new URLSearchParams(""))).toEqual(EMPTY_QUERY);
    expect(parseRunsQuery(new URLSearchParams("failed=false&stuck=1&waiting=bogus"))).toEqual(EMPTY_QUERY);
  });

  it("starts a changed filter at the first page", () => {
    const paged = { ...EMPTY_QUERY, status: "failed", cursor: "c2" };
    expect(withFilter(paged, { agent: "support" })).toEqual({ ...EMPTY_QUERY, status: "failed", agent: "support" });
  });

  it("asks the API with the same names", () => {
    const query = { ...EMPTY_QUERY, agent: "a", waiting: "any" as const, stuck: true, cursor: "c" };
    expect(runsApiParams(query, 50)).toEqual({ limit: 50, agent: "a", waiting: "any", stuck: true, cursor: "c" });
  });
});
