// agui-gateway/copilotkit: a CopilotKit runtime runner whose threads live in the gateway, not in the runtime's memory.
export { GatewayRunner, type GatewayRunnerOptions } from "./gateway-runner.js";
