// agui-gateway/client: an @ag-ui/client agent whose runs survive reloads, network cuts and gateway restarts.
export { GatewayAgent, GatewayStreamError, type GatewayAgentConfig } from "./gateway-agent.js";
