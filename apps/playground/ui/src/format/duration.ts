// Durations and times as a person reads them.

/** Seconds as "2m 05s", "1h 02m 03s", "12.5s", "340ms". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "—";
  if (seconds < 1) return `${Math.round(seconds * 1000)}ms`;
  if (seconds < 60) {
    const rounded = Math.round(seconds * 10) / 10;
    return rounded < 60 ? `${rounded}s` : "1m 00s";
  }
  const whole = Math.round(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  const ss = String(s).padStart(2, "0");
  if (h > 0) return `${h}h ${String(m).padStart(2, "0")}m ${ss}s`;
  return `${m}m ${ss}s`;
}

/** An ISO timestamp as local date and time, or "—". */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { hour12: false });
}

/** Seconds between two ISO timestamps, or null when either is missing. */
export function secondsBetween(start: string | null | undefined, end: string | null | undefined) {
  if (!start || !end) return null;
  const ms = Date.parse(end) - Date.parse(start);
  return Number.isFinite(ms) ? ms / 1000 : null;
}
