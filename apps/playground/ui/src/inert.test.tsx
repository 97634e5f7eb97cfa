import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { InertText, JsonBlock } from "./components/InertText";
import { inert, inertJson } from "./inert";

/** The characters of `text` a reader would not see: controls (but \n and \t) and bidi controls. */
function rawControls(text: string): string[] {
  const bidi = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);
  return [...text].filter((char) => {
    const code = char.codePointAt(0)!;
    const control = (code < 0x20 && char !== "\n" && char !== "\t") || (code >= 0x7f && code <= 0x9f);
    return control || bidi.has(code);
  });
}

const HOSTILE = [
  "<script>window.__pwned = 1</script>",
  '<img src=x onerror="window.__pwned = 2">',
  "\u001b[31mred\u001b[0m \u001b]52;c;Y2xpcGJvYXJk\u0007",
  "invoice\u202Egpj.exe",
  "\u2066isolated\u2069 \u200Emark\u200F \u061Carabic",
  "nul\u0000 del\u007F c1\u009B",
].join("\n");

describe("inert", () => {
  it("escapes ANSI escapes and other C0/C1 controls", () => {
    expect(inert("\u001b[31mred")).toBe("\\x1b[31mred");
    expect(inert("a\u0007b")).toBe("a\\x07b");
    expect(inert("nul\u0000")).toBe("nul\\x00");
    expect(inert("del\u007f")).toBe("del\\x7f");
    expect(inert("csi\u009b2J")).toBe("csi\\x9b2J");
  });

  it("escapes every bidirectional control", () => {
    for (const code of [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c]) {
      const char = String.fromCodePoint(code);
      expect(inert(`a${char}b`)).toBe(`a\\u${code.toString(16).padStart(4, "0")}b`);
    }
    expect(inert("invoice\u202Egpj.exe")).toBe("invoice\\u202egpj.exe");
  });

  it("keeps newlines, tabs, joiners and ordinary text, and markup as characters", () => {
    expect(inert("line 1\n\tline 2")).toBe("line 1\n\tline 2");
    expect(inert("👩\u200d💻 فارسی\u200c")).toBe("👩\u200d💻 فارسی\u200c");
    expect(inert("<b>bold</b> & ü")).toBe("<b>bold</b> & ü");
  });

  it("escapes newlines too on one line, and cuts a long string saying how much", () => {
    expect(inert("a\nb\tc\r", { oneLine: true })).toBe("a\\nb\\tc\\r");
    expect(inert("x".repeat(12), { limit: 5 })).toBe("xxxxx … (7 more characters)");
  });

  it("leaves no raw control or bidi character in a hostile string", () => {
    const shown = inert(HOSTILE);
    expect(rawControls(shown)).toEqual([]);
    expect(shown).toContain("\\x1b[31m");
    expect(shown).toContain("\\u202e");
    expect(shown).toContain("<script>");
  });

  it("shows JSON with escapes as inert shows them", () => {
    const shown = inertJson({ page: "\u001b[2J<img onerror=x>\u202e", path: "C:\\u001b" });
    expect(shown).toContain('"page": "\\x1b[2J<img onerror=x>\\u202e"');
    // A backslash written in the text stays a backslash: it is not an escape.
    expect(shown).toContain('"path": "C:\\\\u001b"');
  });
});

describe("rendered inert text", () => {
  it("adds no element and shows the hostile text as text", () => {
    const { container } = render(
      <div>
        <InertText testId="text" text={HOSTILE} />
        <JsonBlock testId="json" value={{ result: HOSTILE }} />
      </div>,
    );
    expect(container.querySelectorAll("script, img, iframe, object, embed")).toHaveLength(0);
    const text = screen.getByTestId("text");
    expect(text.children).toHaveLength(0);
    expect(text.textContent).toContain("<script>window.__pwned = 1</script>");
    expect(text.textContent).toContain('<img src=x onerror="window.__pwned = 2">');
    expect(text.textContent).toContain("invoice\\u202egpj.exe");
    expect(text.textContent).toContain("\\x1b[31mred");
    const json = screen.getByTestId("json");
    expect(json.children).toHaveLength(0);
    expect(json.textContent).toContain("\\u202e");
    expect(json.textContent).toContain("\\x1b");
    expect(rawControls(container.textContent ?? "")).toEqual([]);
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });
});
