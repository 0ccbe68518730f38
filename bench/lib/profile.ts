// Top self-time functions of a V8 .cpuprofile (node --cpu-prof), to say where the gateway spends a run.
import { readFileSync } from "node:fs";
import { ROOT } from "./build.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface HotSpot {
  fn: string;
  where: string;
  selfMs: number;
  /** Percent of non-idle samples. */
  percent: number;
}

export function hotSpots(file: string, top = 20): { busyMs: number; spots: HotSpot[] } {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, { fn: string; where: string; us: number }>();
  let busyUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]!);
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (!node || node.callFrame.functionName === "(idle)") continue;
    busyUs += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${url.replace(/^file:\/\//, "").replace(ROOT, "")}:${lineNumber + 1}` : "";
    const key = `${functionName}@${where}`;
    const entry = self.get(key) ?? { fn: functionName || "(anonymous)", where, us: 0 };
    entry.us += us;
    self.set(key, entry);
  }
  const spots = [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((e) => ({ fn: e.fn, where: e.where, selfMs: Math.round(e.us / 1000), percent: Math.round((e.us / busyUs) * 1000) / 10 }));
  return { busyMs: Math.round(busyUs / 1000), spots };
}
