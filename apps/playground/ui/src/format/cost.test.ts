import { describe, expect, it } from "vitest";
import { describeCostSource, formatAmount, formatCost } from "./cost";
import { formatDuration } from "./duration";

describe("formatCost", () => {
  it("says unknown for a cost that is null or missing, never 0", () => {
    expect(formatCost(null)).toBe("unknown");
    expect(formatCost(undefined)).toBe("unknown");
    expect(formatCost(null)).not.toMatch(/0/);
    expect(describeCostSource(null)).toBe("");
  });

  it("shows 0 only when a cost says 0, with its source", () => {
    const zero = { amount: "0", currency: "USD", source: "provider" as const };
    expect(formatCost(zero)).toBe("0 USD");
    expect(describeCostSource(zero)).toBe("reported by the provider");
  });

  it("keeps the server's exact decimal, never exponent form", () => {
    expect(formatCost({ amount: "0.0000004", currency: "USD", source: "snapshot", as_of: "2026-01-01" })).toBe(
      "0.0000004 USD",
    );
    expect(formatAmount(4e-7)).toBe("0.0000004");
    expect(formatAmount(12.5)).toBe("12.5");
    expect(formatAmount(3)).toBe("3");
    expect(describeCostSource({ amount: "1", currency: "EUR", source: "snapshot", as_of: "2026-01-01" })).toBe(
      "from the price table as of 2026-01-01",
    );
  });
});

describe("formatDuration", () => {
  it("reads as minutes and seconds", () => {
    expect(formatDuration(125)).toBe("2m 05s");
    expect(formatDuration(3723)).toBe("1h 02m 03s");
    expect(formatDuration(12.34)).toBe("12.3s");
    expect(formatDuration(0.25)).toBe("250ms");
    expect(formatDuration(59.97)).toBe("1m 00s");
  });
});
