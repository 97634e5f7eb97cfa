// Which rows of a long list are mounted: the ones in view and a few on either side.

export interface RowWindow {
  first: number;
  /** One past the last row to mount. */
  last: number;
}

export function rowWindow(
  scrollTop: number,
  viewHeight: number,
  rowHeight: number,
  count: number,
  overscan = 4,
): RowWindow {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(count, Math.ceil((scrollTop + viewHeight) / rowHeight) + overscan);
  return { first, last: Math.max(first, last) };
}

/** The list is scrolled to within `rows` rows of its end: time to load the next page. */
export function nearEnd(
  scrollTop: number,
  viewHeight: number,
  rowHeight: number,
  count: number,
  rows = 5,
): boolean {
  return scrollTop + viewHeight >= (count - rows) * rowHeight;
}
