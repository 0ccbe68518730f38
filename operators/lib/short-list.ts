// Lists a waiting stream keeps (for minutes, at a permission) at their size: an array grown by push reserves 17
// slots for its first entry and 16 more each time it is full, where most of these lists hold one to four.

/** Lists up to this long are copied to their size. */
const SHORT_LIST = 4;

/** `list` itself, or a copy of its own size when it is short. */
export function atItsSize<T>(list: T[]): T[] {
  return list.length <= SHORT_LIST ? list.slice() : list;
}
