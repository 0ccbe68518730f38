// DELETE /threads/{id} races a new turn of the same owner on a file store. The doc: "cancels the thread's run if one
// is going … then forgets the thread". Whatever order the two land in, a 204 must never leave a run streaming on a
// thread that has no record (its run ids gone, its id free for anyone to take while the run goes on).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileThreadStore } from "../src/state/file-store.js";
import { expectValidRun, openSse, postRaw, readSse, scriptByPrompt, slowTurn, startJwtStack, type JwtStack, type LiveSse } from "./helpers/e2e.js";
import { httpCall } from "./helpers/http.js";
import { tokenFor } from "./helpers/jwks.js";

const SLOW = "stream slowly";
const QUICK = "answer quickly";
const ATTEMPTS = 160;

let stack: JwtStack;
let stateDir: string;
let store: FileThreadStore;

beforeAll(async () => {
  stateDir = await mkdtemp(path.join(tmpdir(), "agui-break-delete-"));
  stack = await startJwtStack({
    kid: "key-1",
    script: scriptByPrompt({ [SLOW]: () => slowTurn("session-del", 200, 50), [QUICK]: () => slowTurn("session-del", 1, 0) }),
    gateway: { stateDir },
  });
  store = new FileThreadStore({ dir: stateDir });
});

afterAll(async () => {
  await stack.close();
  await rm(stateDir, { recursive: true, force: true });
});

/** The stream's terminal event, or undefined while it still streams after `ms`. */
async function endWithin(live: LiveSse, ms: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  const end = live.until((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR").then((e) => e?.type ?? "closed");
  try {
    return await Promise.race([end, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

describe("DELETE /threads/{id} racing the owner's next turn", () => {
  it("cancels the going run and forgets the thread: never a 204 over a live run, never a refusal that leaves the run going", async () => {
    const alice = { "Content-Type": "application/json", Authorization: `Bearer ${await tokenFor(stack.key, "alice")}` };
    const orphans: string[] = [];
    const busy: string[] = [];
    for (let attempt = 0; attempt < ATTEMPTS && orphans.length + busy.length === 0; attempt++) {
      const first = stack.input({ prompt: QUICK });
      const quick = await postRaw(stack.gateway.url, first, alice);
      expect(quick.status, quick.text).toBe(200);
      expectValidRun(readSse(quick.text).events);

      const turn = openSse(stack.gateway.url, stack.input({ threadId: first.threadId, prompt: SLOW }), alice);
      // Stagger the DELETE a little differently each time, to land in the admission's window.
      for (let i = 0; i < attempt % 40; i++) await new Promise((resolve) => setImmediate(resolve));
      const deleted = httpCall(`${stack.gateway.url}threads/${first.threadId}`, { method: "DELETE", headers: { Authorization: alice.Authorization } });
      const [live, forgot] = await Promise.all([turn, deleted]);
      expect(live.status).toBe(200);
      if (forgot.status !== 204) {
        // Refused: the owner's turn must then have been cancelled (the route's promise), not left running.
        expect(forgot.status, forgot.text).toBe(409);
        if ((await endWithin(live, 500)) === undefined) busy.push(`${first.threadId}: ${forgot.json?.error?.code}`);
        live.abort();
        await expect.poll(() => stack.gateway.runs.activeRunCount).toBe(0);
        continue;
      }
      const stored = await store.load(first.threadId);
      const end = stored === undefined ? await endWithin(live, 1_500) : "re-created";
      if (end === undefined) orphans.push(first.threadId);
      live.abort();
      await expect.poll(() => stack.gateway.runs.activeRunCount).toBe(0);
    }
    expect.soft(busy, "DELETE refused (409) while the owner's turn went on uncancelled").toEqual([]);
    expect(orphans, "threads forgotten (204) while their run kept streaming").toEqual([]);
  }, 180_000);
});
