// Making a string from a log, a spec, a model or a tool inert before the page shows it.
//
// Such strings are always rendered as React text nodes, never as HTML (ESLint bans
// `dangerouslySetInnerHTML` and innerHTML), so markup in them shows as the characters it is
// made of. What a text node still obeys is invisible characters: bidirectional controls make
// text read other than it is stored (U+202E turns "exe.txt" around), and control characters
// (an ANSI escape, a NUL) hide in it. `inert` turns each into a visible escape that says which
// it was (`\x1b`, `\u202e`), as the terminal's `psych_cli` inert does.

// Cc: C0, DEL and C1 controls. Cf: format characters (the bidirectional controls U+202A-U+202E,
// U+2066-U+2069, U+200E, U+200F, U+061C among them, and the tag characters that smuggle text
// past a reader). Cs: lone surrogates. Zl, Zp: line and paragraph separators.
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;

// Kept as they are: newline and tab lay text out; the zero-width joiner and non-joiner are
// needed by Persian, Indic scripts and emoji sequences, and reorder and hide nothing.
const KEPT = new Set(["\n", "\t", "\u200c", "\u200d"]);
const KEPT_ON_ONE_LINE = new Set(["\u200c", "\u200d"]);

export interface InertOptions {
  /** Escape newlines and tabs too, for a string shown on one line (default: keep them). */
  oneLine?: boolean;
  /** The most characters shown; a longer string is cut and says how much was cut. */
  limit?: number;
}

/** `text` with every control, format and bidirectional character shown as its escape. */
export function inert(text: string, options: InertOptions = {}): string {
  const kept = options.oneLine ? KEPT_ON_ONE_LINE : KEPT;
  let shown = text;
  let cut = 0;
  if (options.limit !== undefined && shown.length > options.limit) {
    cut = shown.length - options.limit;
    shown = shown.slice(0, options.limit);
  }
  shown = shown.replace(UNSAFE, (char) => (kept.has(char) ? char : escape(char)));
  if (cut > 0) shown += ` … (${cut.toLocaleString("en-US")} more characters)`;
  return shown;
}

const NAMED: Record<string, string> = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };

function escape(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x100) return `\\x${hex(code, 2)}`;
  if (code < 0x10000) return `\\u${hex(code, 4)}`;
  return `\\U${hex(code, 8)}`;
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, "0");
}

/** Any JSON value as pretty, inert text (strings inside it keep their escapes visible). */
export function inertJson(value: unknown, options: InertOptions = {}): string {
  if (value === undefined) return "";
  if (typeof value === "string") return inert(value, options);
  const json = JSON.stringify(value, null, 2) ?? typeof value;
  // JSON.stringify writes C0 controls as \u001b: show them as inert shows them (\x1b), so an
  // escape reads the same wherever it is shown. The rest (C1, bidi) is still raw here.
  const escaped = json.replace(/\\(\\|u00([0-9a-f]{2}))/g, (whole, _, code?: string) =>
    code === undefined ? whole : `\\x${code}`,
  );
  return inert(escaped, options);
}
