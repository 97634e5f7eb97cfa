// Spec versions are content hashes ("sha256:9911…"): a table shows the first digits.

/** The first `digits` hex digits of a version, without its "sha256:" prefix. */
export function shortVersion(version: string, digits = 12): string {
  return version.replace(/^sha256:/, "").slice(0, digits);
}
