// Parsing the editor's JSON text while noting the line of every key, so an error about
// `tools/0/name` can be shown beside the line where that key is written, and a text that does
// not parse says at which line and column.

export interface JsonLines {
  ok: true;
  value: unknown;
  /** The line (1-based) of each path ("tools/0/name"; "" for the whole text): of the key for
   * an object's member, of the value for an array's item. */
  lines: Map<string, number>;
}

export interface JsonSyntaxError {
  ok: false;
  message: string;
  line: number;
  column: number;
}

class Syntax extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(message);
  }
}

export function parseJsonLines(text: string): JsonLines | JsonSyntaxError {
  const starts = lineStarts(text);
  const lines = new Map<string, number>();
  const lineOf = (index: number) => locate(starts, index).line;
  let i = 0;

  const fail = (message: string, at = i): never => {
    throw new Syntax(message, at);
  };
  const skip = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const describe = () => (i >= text.length ? "the end of the text" : `'${text[i]}'`);

  const value = (path: string[]): void => {
    skip();
    const char = text[i];
    if (char === "{") return object(path);
    if (char === "[") return array(path);
    if (char === '"') return void string();
    if (char === "-" || (char !== undefined && char >= "0" && char <= "9")) return number();
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    fail(`expected a value, found ${describe()}`);
  };

  const object = (path: string[]) => {
    i++; // {
    skip();
    if (text[i] === "}") {
      i++;
      return;
    }
    for (;;) {
      skip();
      if (text[i] !== '"') fail(`expected a key in double quotes, found ${describe()}`);
      const keyAt = i;
      const key = string();
      lines.set([...path, key].join("/"), lineOf(keyAt));
      skip();
      if (text[i] !== ":") fail(`expected ':' after the key "${key}", found ${describe()}`);
      i++;
      value([...path, key]);
      skip();
      if (text[i] === ",") {
        i++;
        continue;
      }
      if (text[i] === "}") {
        i++;
        return;
      }
      fail(`expected ',' or '}' after the value of "${key}", found ${describe()}`);
    }
  };

  const array = (path: string[]) => {
    i++; // [
    skip();
    if (text[i] === "]") {
      i++;
      return;
    }
    for (let index = 0; ; index++) {
      skip();
      lines.set([...path, String(index)].join("/"), lineOf(i));
      value([...path, String(index)]);
      skip();
      if (text[i] === ",") {
        i++;
        continue;
      }
      if (text[i] === "]") {
        i++;
        return;
      }
      fail(`expected ',' or ']' after item ${index}, found ${describe()}`);
    }
  };

  const string = (): string => {
    const start = i;
    i++; // opening quote
    while (i < text.length) {
      const char = text[i]!;
      if (char === '"') {
        i++;
        return JSON.parse(text.slice(start, i)) as string;
      }
      if (char === "\\") {
        const next = text[i + 1];
        if (next === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail("a \\u escape needs four hex digits");
          i += 6;
        } else if (next !== undefined && '"\\/bfnrt'.includes(next)) {
          i += 2;
        } else {
          fail(`unknown escape '\\${next ?? ""}' in a string`);
        }
        continue;
      }
      if (char < " ") fail("a control character (such as a raw newline) inside a string");
      i++;
    }
    return fail("a string is not closed", start);
  };

  const number = () => {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!match) fail(`expected a number, found ${describe()}`);
    i += match![0].length;
  };

  try {
    skip();
    lines.set("", lineOf(i));
    value([]);
    skip();
    if (i < text.length) fail(`unexpected ${describe()} after the end of the JSON value`);
  } catch (error) {
    if (!(error instanceof Syntax)) throw error;
    const where = locate(starts, error.at);
    return { ok: false, message: error.message, ...where };
  }
  return { ok: true, value: JSON.parse(text) as unknown, lines };
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") starts.push(i + 1);
  return starts;
}

function locate(starts: number[], index: number): { line: number; column: number } {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >>> 1;
    if (starts[mid]! <= index) low = mid;
    else high = mid - 1;
  }
  return { line: low + 1, column: index - starts[low]! + 1 };
}
