// The demo upstream's agent card: iac-code's name, extensions and skills, bearer auth when a token is set.
import { AgentCard } from "@a2a-js/sdk";

/** The version the demo reports on its card and on /health. */
export const SCRIPTED_VERSION = "0.13.1-scripted";

export function buildAgentCard(url: string, token: string | undefined): AgentCard {
  return AgentCard.fromJSON({
    name: "iac-code",
    description: "Scripted A2A 1.0 upstream (agui-gateway demo): deterministic turns, no LLM, no network.",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    provider: { organization: "agui-gateway", url: "https://github.com/aliyun/iac-code" },
    version: SCRIPTED_VERSION,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [
        { uri: "urn:iac-code:a2a:artifact-metadata:v1", description: "Artifact metadata" },
        {
          uri: "urn:iac-code:a2a:thinking-exposure:v1",
          description: "Thinking exposure",
          params: { enabledTypes: ["raw_thinking", "tool_trace"] },
        },
      ],
    },
    ...(token
      ? {
          securitySchemes: { bearerAuth: { httpAuthSecurityScheme: { scheme: "bearer" } } },
          securityRequirements: [{ schemes: { bearerAuth: { list: [""] } } }],
        }
      : {}),
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "iac_generation",
        name: "IaC generation",
        description: "Writes infrastructure-as-code templates",
        tags: ["iac"],
      },
    ],
  });
}

