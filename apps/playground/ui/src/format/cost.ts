// Showing a cost. A cost that is not known (None on the server, null here) is "unknown",
// never 0: a 0 is shown only when a Cost says so, with the source that said it.

import type { Cost } from "../api/types";

const SOURCES: Record<string, string> = {
  provider: "reported by the provider",
  snapshot: "from the price table",
  override: "from a price override",
  mixed: "from several sources",
};

/** The amount as the server wrote it (a Decimal string), never in exponent form. */
export function formatAmount(amount: string | number): string {
  if (typeof amount === "string") return amount;
  if (!Number.isFinite(amount)) return String(amount);
  // A number from a server that wrote the Decimal as a float: fixed point, trailing zeros cut.
  const fixed = amount.toFixed(12);
  return fixed.includes(".") ? fixed.replace(/\.?0+$/, "") : fixed;
}

/** "0.00042 USD", or "unknown" for a cost that is null or missing. */
export function formatCost(cost: Cost | null | undefined): string {
  if (cost === null || cost === undefined) return "unknown";
  return `${formatAmount(cost.amount)} ${cost.currency}`;
}

/** Where a cost came from, in words; empty for an unknown cost. */
export function describeCostSource(cost: Cost | null | undefined): string {
  if (cost === null || cost === undefined) return "";
  const as = cost.as_of ? ` as of ${cost.as_of}` : "";
  return `${SOURCES[cost.source] ?? cost.source}${as}`;
}
