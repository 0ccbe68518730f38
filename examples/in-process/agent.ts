// A second transport for the same projection: an @ag-ui/client agent that runs in-process (no HTTP
// gateway), talks to an A2A 1.0 kernel through @a2a-js/sdk's own client, and turns the kernel's stream
// into AG-UI events with `createAguiPipeline` — imported exactly as another project would import it.
import { Message, StreamResponse } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";
import { AbstractAgent, type AgentConfig, type BaseEvent, type RunAgentInput } from "@ag-ui/client";
import { createAguiPipeline, type A2AStreamResponse } from "agui-gateway/operators";
import { Observable } from "rxjs";

export class InProcessA2AAgent extends AbstractAgent {
  constructor(
    private readonly a2aUrl: string,
    config: AgentConfig = {},
  ) {
    super(config);
  }

  run(input: RunAgentInput): Observable<BaseEvent> {
    const frames = new Observable<A2AStreamResponse>((subscriber) => {
      const abort = new AbortController();
      void (async () => {
        const client = await new ClientFactory().createFromUrl(this.a2aUrl);
        const text = latestUserText(input);
        const message = Message.fromJSON({ messageId: input.runId, role: "ROLE_USER", parts: [{ text }] });
        const stream = client.sendMessageStream({ tenant: "", message, configuration: undefined, metadata: undefined }, { signal: abort.signal });
        for await (const response of stream) subscriber.next(StreamResponse.toJSON(response) as A2AStreamResponse);
        subscriber.complete();
      })().catch((error: unknown) => subscriber.error(error));
      return () => abort.abort();
    });
    return frames.pipe(
      createAguiPipeline({ threadId: input.threadId, runId: input.runId, heartbeat: false }),
    ) as Observable<BaseEvent>;
  }
}

function latestUserText(input: RunAgentInput): string {
  const user = [...input.messages].reverse().find((m) => m.role === "user");
  if (!user) return "";
  if (typeof user.content === "string") return user.content;
  return user.content.map((part) => (part.type === "text" ? part.text : "")).join("");
}
