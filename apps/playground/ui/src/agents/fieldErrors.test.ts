import { describe, expect, it } from "vitest";
import { fromServer, lineOfPath, pathOfLoc, placeErrors } from "./fieldErrors";
import { parseJsonLines } from "./jsonLines";

const SPEC = `{
  "name": "support",
  "model": {"model": "demo"},
  "tools": [
    {
      "kind": "code",
      "name": ""
    },
    {"kind": "code", "name": "refund"}
  ],
  "max_turns": 0
}`;

function lines(text: string): Map<string, number> {
  const parsed = parseJsonLines(text);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.lines;
}

describe("the line of a path in the spec's text", () => {
  it("finds the line of each key and of each array item", () => {
    const found = lines(SPEC);
    expect(found.get("name")).toBe(2);
    expect(found.get("model/model")).toBe(3);
    expect(found.get("tools")).toBe(4);
    expect(found.get("tools/0")).toBe(5);
    expect(found.get("tools/0/name")).toBe(7);
    expect(found.get("tools/1/name")).toBe(9);
    expect(found.get("max_turns")).toBe(11);
  });

  it("falls back to the nearest enclosing path that is written, else has no line", () => {
    const found = lines(SPEC);
    expect(lineOfPath("tools/0/name", found)).toBe(7);
    expect(lineOfPath("tools/0/timeout", found)).toBe(5); // missing: beside its object
    expect(lineOfPath("deadline", found)).toBeNull();
    expect(lineOfPath("", found)).toBeNull();
  });

  it("places each error beside its line, or above the editor", () => {
    const placed = placeErrors(
      [
        { path: "tools/0/name", message: "must not be empty" },
        { path: "max_turns", message: "Input should be greater than 0" },
        { path: "", message: "the spec names an unknown tool" },
      ],
      lines(SPEC),
    );
    expect(placed.map((e) => e.line)).toEqual([7, 11, null]);
    expect(placeErrors([{ path: "name", message: "x" }], null)[0]!.line).toBeNull();
  });
});

describe("the server's error locations", () => {
  const spec = JSON.parse(SPEC) as unknown;

  it("leaves out a tagged union's tag and a validator's name", () => {
    expect(pathOfLoc(["tools", 0, "code", "name"], spec)).toBe("tools/0/name");
    expect(pathOfLoc(["tools", 1, "function-after[check(), CodeTool]", "name"], spec)).toBe("tools/1/name");
    expect(pathOfLoc(["max_turns"], spec)).toBe("max_turns");
    expect(pathOfLoc([], spec)).toBe("");
  });

  it("makes a location in the request body relative to the spec", () => {
    expect(pathOfLoc(["body", "spec", "tools", 0, "name"], spec)).toBe("tools/0/name");
  });

  it("keeps a missing field's name", () => {
    expect(pathOfLoc(["tools", 1, "code", "timeout"], spec)).toBe("tools/1/timeout");
    expect(fromServer([{ loc: ["tools", 0, "name"], msg: "empty", type: "value_error" }], spec)).toEqual([
      { path: "tools/0/name", message: "empty" },
    ]);
  });
});

describe("a text that is not JSON", () => {
  it("says at which line and column, and what was expected", () => {
    const broken = '{\n  "name": "support",\n  "tools": [1, 2,]\n}';
    const parsed = parseJsonLines(broken);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.line).toBe(3);
    expect(parsed.column).toBe(18);
    expect(parsed.message).toMatch(/expected a value/);
  });

  it("reports a missing comma, an unclosed string and trailing text", () => {
    const comma = parseJsonLines('{"a": 1\n "b": 2}');
    expect(comma).toMatchObject({ ok: false, line: 2, message: expect.stringMatching(/',' or '}'/) as unknown });
    expect(parseJsonLines('{"a": "open}')).toMatchObject({ ok: false, line: 1, column: 7 });
    expect(parseJsonLines("{} x")).toMatchObject({ ok: false, column: 4 });
    expect(parseJsonLines('"\\q"')).toMatchObject({ ok: false });
  });

  it("parses what JSON.parse parses, to the same value", () => {
    for (const text of ['{"a": [1, -2.5e3, true, false, null, "\\u00e9\\n"]}', "[]", " 7 ", '"x"']) {
      const parsed = parseJsonLines(text);
      expect(parsed.ok).toBe(true);
      if (parsed.ok) expect(parsed.value).toEqual(JSON.parse(text));
    }
  });
});
