// Marble lines for stage specs: one source item (and what it produced) every 10 frames, so a group of
// several events at one instant does not shift the ones after it.

/** `tenApart("a", "(st)", "", "T")` → `"a 9ms (st) 6ms 10ms T"`: the i-th group at frame 10·i. Trailing "" are dropped. */
export function tenApart(...groups: string[]): string {
  while (groups.length > 0 && groups[groups.length - 1] === "") groups = groups.slice(0, -1);
  return groups
    .map((group, i) => {
      if (i === groups.length - 1) return group;
      if (group === "") return "10ms";
      return `${group} ${10 - group.length}ms`;
    })
    .filter((token) => token !== "")
    .join(" ");
}
