// Child: a floor or raw relay (bench/relays.ts) in front of the bench upstream.
import { childArgs, failStart, serveParent } from "../lib/child-ipc.js";
import { startRelay, type RelayKind } from "../relays.js";

try {
  const { kind, upstreamUrl } = childArgs<{ kind: RelayKind; upstreamUrl: string }>();
  const relay = await startRelay(kind, upstreamUrl);
  serveParent({ url: relay.url, port: relay.port }, {}, () => relay.close());
} catch (error) {
  failStart(error);
}
