import { describe, expect, it } from "vitest";
import { InputError } from "../src/input-error.js";
import { type AguiMessage, latestUserMessage, parseRunAgentInput, peekPreferredLanguage } from "../src/runs/input.js";

// The minimal normal-run example of the product spec, verbatim.
const SEED_EXAMPLE = `{
  "threadId": "8473547e-c8ed-4aef-a84c-603a6a8d42da",
  "runId": "32c263f2-b0b0-42ac-905c-524a0a9bb652",
  "state": {},
  "messages": [
    {"id": "message-1", "role": "user", "content": "Crie um modelo de VPC"}
  ],
  "tools": [],
  "context": [],
  "forwardedProps": {
    "iacCode": {
      "schemaVersion": 1,
      "rosInvocationId": "invocation-1",
      "cwd": "/workspace/session-1",
      "runMode": "normal"
    }
  }
}`;

const ENVELOPE = "Invalid AG-UI RunAgentInput envelope.";
const PROPS = "Invalid iac-code forwarded properties.";

function seed(): Record<string, unknown> {
  return JSON.parse(SEED_EXAMPLE) as Record<string, unknown>;
}

function withIacCode(patch: Record<string, unknown>): Record<string, unknown> {
  const body = seed();
  const props = body["forwardedProps"] as { iacCode: Record<string, unknown> };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) delete props.iacCode[key];
    else props.iacCode[key] = value;
  }
  return body;
}

function failure(body: Record<string, unknown>): InputError {
  try {
    parseRunAgentInput(body);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return error as InputError;
  }
  throw new Error("expected parseRunAgentInput to throw");
}

function expectFailure(body: Record<string, unknown>, base: string, field?: string, reason?: string): void {
  const error = failure(body);
  expect({ base: error.base, field: error.field, reason: error.reason }).toEqual({ base, field, reason });
  expect(error.code).toBe("INVALID_INPUT");
}

describe("parseRunAgentInput: the seed example", () => {
  it("parses the minimal example with defaults filled in", () => {
    const request = parseRunAgentInput(seed());
    expect(request).toEqual({
      threadId: "8473547e-c8ed-4aef-a84c-603a6a8d42da",
      runId: "32c263f2-b0b0-42ac-905c-524a0a9bb652",
      messages: [{ id: "message-1", role: "user", content: "Crie um modelo de VPC" }],
      iacCode: {
        schemaVersion: 1,
        rosInvocationId: "invocation-1",
        cwd: "/workspace/session-1",
        runMode: "normal",
        cleanupOnly: false,
      },
      ignoredForwardedProps: 0,
    });
    expect("resume" in request).toBe(false);
    expect("parentRunId" in request).toBe(false);
  });

  it("accepts every documented iacCode field with its type", () => {
    const iacCode = {
      schemaVersion: 1,
      rosInvocationId: "x".repeat(256),
      cwd: "/w",
      model: "m",
      llmApiKey: "k",
      llmHeaders: { "X-A": "1" },
      thinking: { enabled: true, effort: "high", budget: 1024 },
      userId: "u",
      channel: "c",
      preferredLanguage: "pt",
      candidatePresentation: "rich",
      runMode: "pipeline",
      pipelineName: "selling",
      cleanupOnly: true,
      alibabaCloud: { accessKeyId: "a", accessKeySecret: "s", securityToken: "t", regionId: "cn-hangzhou" },
    };
    const body = { ...seed(), forwardedProps: { iacCode } };
    expect(parseRunAgentInput(body).iacCode).toEqual(iacCode);
  });

  it("defaults thinking.enabled to false and keeps parentRunId", () => {
    const body = { ...withIacCode({ thinking: { budget: 5 } }), parentRunId: "run-0" };
    const request = parseRunAgentInput(body);
    expect(request.iacCode.thinking).toEqual({ enabled: false, budget: 5 });
    expect(request.parentRunId).toBe("run-0");
  });

  it("accepts unknown top-level envelope keys and null optional standard fields", () => {
    const body = { ...seed(), somethingNew: { a: 1 }, parentRunId: null, protocolVersion: "1.0", resume: null };
    const request = parseRunAgentInput(body);
    expect(request.runId).toBe("32c263f2-b0b0-42ac-905c-524a0a9bb652");
    expect(request.parentRunId).toBeUndefined();
    expect(request.resume).toBeUndefined();
  });

  it("counts rosInvocationId in code points, not UTF-16 units", () => {
    expect(parseRunAgentInput(withIacCode({ rosInvocationId: "😀".repeat(256) })).iacCode.rosInvocationId).toHaveLength(512);
    expectFailure(withIacCode({ rosInvocationId: "😀".repeat(257) }), PROPS, "forwardedProps.iacCode.rosInvocationId", "Expected 1 to 256 characters.");
  });
});

describe("parseRunAgentInput: iacCode field errors name the field", () => {
  const F = "forwardedProps.iacCode";
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ["schemaVersion as the string \"1\"", { schemaVersion: "1" }, `${F}.schemaVersion`, "Expected the number 1."],
    ["schemaVersion 2", { schemaVersion: 2 }, `${F}.schemaVersion`, "Expected the number 1."],
    ["schemaVersion missing", { schemaVersion: undefined }, `${F}.schemaVersion`, "Required field is missing."],
    ["rosInvocationId missing", { rosInvocationId: undefined }, `${F}.rosInvocationId`, "Required field is missing."],
    ["rosInvocationId 257 chars", { rosInvocationId: "r".repeat(257) }, `${F}.rosInvocationId`, "Expected 1 to 256 characters."],
    ["rosInvocationId empty", { rosInvocationId: "" }, `${F}.rosInvocationId`, "Expected 1 to 256 characters."],
    ["rosInvocationId a number", { rosInvocationId: 7 }, `${F}.rosInvocationId`, "Expected a string."],
    ["userId 257 chars", { userId: "u".repeat(257) }, `${F}.userId`, "Expected 1 to 256 characters."],
    ["userId 257 code points of two units", { userId: "😀".repeat(257) }, `${F}.userId`, "Expected 1 to 256 characters."],
    ["cwd missing", { cwd: undefined }, `${F}.cwd`, "Required field is missing."],
    ["cwd a number", { cwd: 1 }, `${F}.cwd`, "Expected a string."],
    ["model a number", { model: 1 }, `${F}.model`, "Expected a string."],
    ["model null", { model: null }, `${F}.model`, "Expected a string."],
    ["llmApiKey a boolean", { llmApiKey: true }, `${F}.llmApiKey`, "Expected a string."],
    ["llmHeaders an array", { llmHeaders: [] }, `${F}.llmHeaders`, "Expected an object."],
    ["llmHeaders a string", { llmHeaders: "a: b" }, `${F}.llmHeaders`, "Expected an object."],
    ["llmHeaders value a number", { llmHeaders: { "X-N": 1 } }, `${F}.llmHeaders.X-N`, "Expected a string."],
    ["thinking a boolean", { thinking: true }, `${F}.thinking`, "Expected an object."],
    ["thinking.enabled \"true\"", { thinking: { enabled: "true" } }, `${F}.thinking.enabled`, "Expected a boolean."],
    ["thinking.effort a number", { thinking: { effort: 3 } }, `${F}.thinking.effort`, "Expected a string."],
    ["thinking.budget 1.5", { thinking: { budget: 1.5 } }, `${F}.thinking.budget`, "Expected a positive integer."],
    ["thinking.budget 0", { thinking: { budget: 0 } }, `${F}.thinking.budget`, "Expected a positive integer."],
    ["thinking.budget \"10\"", { thinking: { budget: "10" } }, `${F}.thinking.budget`, "Expected a positive integer."],
    ["thinking unknown key", { thinking: { enabled: true, level: 1 } }, `${F}.thinking.level`, "Unknown field."],
    ["userId a number", { userId: 5 }, `${F}.userId`, "Expected a string."],
    ["channel an object", { channel: {} }, `${F}.channel`, "Expected a string."],
    ["preferredLanguage a number", { preferredLanguage: 1 }, `${F}.preferredLanguage`, "Expected a string."],
    ["candidatePresentation other", { candidatePresentation: "fancy" }, `${F}.candidatePresentation`, "Expected one of the allowed values."],
    ["runMode other", { runMode: "batch" }, `${F}.runMode`, "Expected one of the allowed values."],
    ["pipelineName a number", { pipelineName: 2 }, `${F}.pipelineName`, "Expected a string."],
    ["cleanupOnly \"true\"", { cleanupOnly: "true" }, `${F}.cleanupOnly`, "Expected a boolean."],
    ["cleanupOnly 1", { cleanupOnly: 1 }, `${F}.cleanupOnly`, "Expected a boolean."],
    ["alibabaCloud a string", { alibabaCloud: "ak" }, `${F}.alibabaCloud`, "Expected an object."],
    ["alibabaCloud.regionId a number", { alibabaCloud: { regionId: 1 } }, `${F}.alibabaCloud.regionId`, "Expected a string."],
    ["alibabaCloud unknown key", { alibabaCloud: { region: "x" } }, `${F}.alibabaCloud.region`, "Unknown field."],
    ["unknown iacCode key", { activeGuidance: true }, `${F}.activeGuidance`, "Unknown field."],
    ["snake_case alias", { ros_invocation_id: "r" }, `${F}.ros_invocation_id`, "Unknown field."],
  ];
  it.each(cases)("%s", (_name, patch, field, reason) => {
    expectFailure(withIacCode(patch), PROPS, field, reason);
  });

  it("puts the field and reason in the message", () => {
    expect(failure(withIacCode({ schemaVersion: "1" })).message).toBe(
      "Invalid iac-code forwarded properties. forwardedProps.iacCode.schemaVersion: Expected the number 1.",
    );
  });

  it("reports the first failing field in a deterministic order", () => {
    const body = withIacCode({ cleanupOnly: "no", schemaVersion: "1", extra: 1 });
    expectFailure(body, PROPS, "forwardedProps.iacCode.schemaVersion", "Expected the number 1.");
    expectFailure(withIacCode({ extra: 1 }), PROPS, "forwardedProps.iacCode.extra", "Unknown field.");
  });
});

describe("parseRunAgentInput: forwardedProps", () => {
  it("requires forwardedProps with iacCode", () => {
    expectFailure({ ...seed(), forwardedProps: undefined }, PROPS, "forwardedProps", "Required field is missing.");
    expectFailure({ ...seed(), forwardedProps: [] }, PROPS, "forwardedProps", "Expected an object.");
    expectFailure({ ...seed(), forwardedProps: {} }, PROPS, "forwardedProps.iacCode", "Required field is missing.");
    expectFailure({ ...seed(), forwardedProps: { iac_code: {} } }, PROPS, "forwardedProps.iacCode", "Required field is missing.");
  });

  it("ignores and counts top-level keys besides iacCode (CopilotKit properties), never returning them", () => {
    const extra = seed();
    Object.assign(extra["forwardedProps"] as Record<string, unknown>, { a2uiCatalogAvailable: true, toolChoice: "auto", command: { resume: "x" } });
    const request = parseRunAgentInput(extra);
    expect(request.ignoredForwardedProps).toBe(3);
    expect(JSON.stringify(request)).not.toMatch(/a2uiCatalogAvailable|toolChoice|command/);
  });

  it("keeps rejecting unknown keys inside iacCode", () => {
    const extra = seed();
    ((extra["forwardedProps"] as Record<string, unknown>)["iacCode"] as Record<string, unknown>)["toolChoice"] = "auto";
    expectFailure(extra, PROPS, "forwardedProps.iacCode.toolChoice", "Unknown field.");
  });

  it("requires iacCode to be an object", () => {
    expectFailure({ ...seed(), forwardedProps: { iacCode: "x" } }, PROPS, "forwardedProps.iacCode", "Expected an object.");
  });
});

describe("parseRunAgentInput: the standard envelope", () => {
  const drop = (key: string) => {
    const body = seed();
    delete body[key];
    return body;
  };

  it("requires non-empty threadId and runId", () => {
    expectFailure(drop("threadId"), ENVELOPE, "threadId", "Required field is missing.");
    expectFailure({ ...seed(), threadId: "" }, ENVELOPE, "threadId", "Expected a non-empty string.");
    expectFailure({ ...seed(), runId: 42 }, ENVELOPE, "runId", "Expected a non-empty string.");
  });

  it("requires state to be present but accepts any JSON value", () => {
    expectFailure(drop("state"), ENVELOPE, "state", "Required field is missing.");
    expect(() => parseRunAgentInput({ ...seed(), state: null })).not.toThrow();
    expect(() => parseRunAgentInput({ ...seed(), state: [1, "x"] })).not.toThrow();
  });

  it("requires tools to be an empty array", () => {
    expectFailure(drop("tools"), ENVELOPE, "tools", "Required field is missing.");
    expectFailure({ ...seed(), tools: {} }, ENVELOPE, "tools", "Expected an array.");
    const error = failure({ ...seed(), tools: [{ name: "t", description: "d", parameters: {} }] });
    expect(error.base).toBe("Client-defined tools are not supported.");
    expect(error.field).toBe("tools");
    expect(error.reason).toBeUndefined();
    expect(error.message).toBe('Client-defined tools are not supported. tools: "t"');
  });

  it("a refused tools list names the tools, quoted and bounded", () => {
    const tools = [{ name: "search" }, { name: "get\nWeather" }, { description: "nameless" }, { name: "x".repeat(100) }];
    const error = failure({ ...seed(), tools });
    expect(error.values).toEqual(['"search"', '"get\\nWeather"', JSON.stringify(`${"x".repeat(64)}…`)]);
    const many = failure({ ...seed(), tools: Array.from({ length: 12 }, (_, i) => ({ name: `t${i}` })) });
    expect(many.values).toHaveLength(11);
    expect(many.values?.at(-1)).toBe("… (12 tools)");
  });

  it("reads protocolVersion when declared", () => {
    expect(parseRunAgentInput({ ...seed(), protocolVersion: "1.0" }).protocolVersion).toBe("1.0");
    expect("protocolVersion" in parseRunAgentInput(seed())).toBe(false);
  });

  it("requires context to be an array", () => {
    expectFailure(drop("context"), ENVELOPE, "context", "Required field is missing.");
    expectFailure({ ...seed(), context: "c" }, ENVELOPE, "context", "Expected an array.");
  });

  it("checks optional parentRunId and protocolVersion types", () => {
    expectFailure({ ...seed(), parentRunId: 1 }, ENVELOPE, "parentRunId", "Expected a string.");
    expectFailure({ ...seed(), protocolVersion: 1 }, ENVELOPE, "protocolVersion", "Expected a string.");
  });

  it("checks each message's id, role and user content", () => {
    const withMessages = (messages: unknown) => ({ ...seed(), messages });
    expectFailure(drop("messages"), ENVELOPE, "messages", "Required field is missing.");
    expectFailure(withMessages({}), ENVELOPE, "messages", "Expected an array.");
    expectFailure(withMessages(["hi"]), ENVELOPE, "messages.0", "Expected an object.");
    expectFailure(withMessages([{ role: "user", content: "x" }]), ENVELOPE, "messages.0.id", "Required field is missing.");
    expectFailure(withMessages([{ id: 1, role: "user", content: "x" }]), ENVELOPE, "messages.0.id", "Expected a string.");
    // The kernel echoes a user message's id, and the gateway refuses incoming ids past 256 code points.
    expectFailure(withMessages([{ id: "a", role: "assistant" }, { id: "i".repeat(257), role: "user", content: "x" }]), ENVELOPE, "messages.1.id", "Expected 1 to 256 characters.");
    expect(() => parseRunAgentInput(withMessages([{ id: "😀".repeat(256), role: "user", content: "x" }]))).not.toThrow();
    expectFailure(withMessages([{ id: "a", role: "robot" }]), ENVELOPE, "messages.0.role", "Expected one of the allowed values.");
    expectFailure(
      withMessages([{ id: "a", role: "assistant", content: "ok" }, { id: "b", role: "user", content: 5 }]),
      ENVELOPE,
      "messages.1.content",
      "Invalid value.",
    );
    expectFailure(withMessages([{ id: "b", role: "user" }]), ENVELOPE, "messages.0.content", "Required field is missing.");
    const parts = [{ type: "text", text: "a" }];
    const ok = parseRunAgentInput(withMessages([{ id: "s", role: "system", content: "sys" }, { id: "u", role: "user", content: parts }]));
    expect(ok.messages).toEqual([{ id: "s", role: "system", content: "sys" }, { id: "u", role: "user", content: parts }]);
    for (const role of ["developer", "system", "assistant", "tool", "activity", "reasoning"]) {
      expect(() => parseRunAgentInput(withMessages([{ id: "m", role }]))).not.toThrow();
    }
  });

  it("keeps messages exactly as given, including extra keys", () => {
    const message = { id: "u", role: "user", content: "x", name: "n", custom: { deep: [1] } };
    expect(parseRunAgentInput({ ...seed(), messages: [message] }).messages[0]).toBe(message);
  });
});

describe("parseRunAgentInput: resume entries", () => {
  it("accepts resolved and cancelled entries and keeps only interruptId, status and payload", () => {
    const resume = [
      { interruptId: "permission-1", status: "resolved", payload: { decision: "allow_once" }, metadata: { sig: "x" } },
      { interruptId: "question-2", status: "cancelled" },
      { interruptId: "null-3", status: "resolved", payload: null },
    ];
    const request = parseRunAgentInput({ ...seed(), resume });
    expect(request.resume).toEqual([
      { interruptId: "permission-1", status: "resolved", payload: { decision: "allow_once" } },
      { interruptId: "question-2", status: "cancelled" },
      { interruptId: "null-3", status: "resolved", payload: null },
    ]);
    expect(request.resume?.[1] && "payload" in request.resume[1]).toBe(false);
    expect(request.resume?.[2] && "payload" in request.resume[2]).toBe(true);
  });

  it("keeps an empty resume list distinct from an absent one", () => {
    expect(parseRunAgentInput({ ...seed(), resume: [] }).resume).toEqual([]);
  });

  it("rejects malformed entries with the field named", () => {
    expectFailure({ ...seed(), resume: {} }, ENVELOPE, "resume", "Expected an array.");
    expectFailure({ ...seed(), resume: [{ status: "resolved" }] }, ENVELOPE, "resume.0.interruptId", "Required field is missing.");
    expectFailure({ ...seed(), resume: [{ interruptId: "", status: "resolved" }] }, ENVELOPE, "resume.0.interruptId", "Expected a non-empty string.");
    expectFailure(
      { ...seed(), resume: [{ interruptId: "a", status: "resolved" }, { interruptId: "b", status: "denied" }] },
      ENVELOPE,
      "resume.1.status",
      "Expected one of the allowed values.",
    );
    expectFailure({ ...seed(), resume: [{ interruptId: "a", status: "resolved", metadata: [] }] }, ENVELOPE, "resume.0.metadata", "Expected an object.");
  });
});

describe("peekPreferredLanguage", () => {
  it("reads the language without validating the rest", () => {
    expect(peekPreferredLanguage({ forwardedProps: { iacCode: { preferredLanguage: "pt", bogus: 1 } } })).toBe("pt");
  });

  it("returns undefined when absent or not a string", () => {
    expect(peekPreferredLanguage({})).toBeUndefined();
    expect(peekPreferredLanguage({ forwardedProps: "x" })).toBeUndefined();
    expect(peekPreferredLanguage({ forwardedProps: { iacCode: [] } })).toBeUndefined();
    expect(peekPreferredLanguage({ forwardedProps: { iacCode: { preferredLanguage: 1 } } })).toBeUndefined();
  });
});

describe("latestUserMessage", () => {
  it("returns the last user message wherever it sits", () => {
    const messages = [
      { id: "1", role: "user", content: "first" },
      { id: "2", role: "user", content: "second" },
      { id: "3", role: "assistant", content: "reply" },
    ] as AguiMessage[];
    expect(latestUserMessage(messages)?.id).toBe("2");
  });

  it("returns undefined when there is no user message", () => {
    expect(latestUserMessage([{ id: "1", role: "assistant", content: "x" }] as AguiMessage[])).toBeUndefined();
    expect(latestUserMessage([])).toBeUndefined();
  });
});

describe("parseRunAgentInput: prototype keys from JSON", () => {
  const raw = (iacCode: string) =>
    JSON.parse(
      `{"threadId":"t","runId":"r","state":{},"messages":[],"tools":[],"context":[],"forwardedProps":{"iacCode":${iacCode}}}`,
    ) as Record<string, unknown>;

  it("rejects __proto__ as an unknown iacCode key", () => {
    const error = failure(raw('{"schemaVersion":1,"rosInvocationId":"i","cwd":"/w","__proto__":{"cleanupOnly":true}}'));
    expect([error.field, error.reason]).toEqual(["forwardedProps.iacCode.__proto__", "Unknown field."]);
  });

  it("keeps a __proto__ header name as data without touching the prototype", () => {
    const request = parseRunAgentInput(raw('{"schemaVersion":1,"rosInvocationId":"i","cwd":"/w","llmHeaders":{"__proto__":"x","a":"b"}}'));
    const headers = request.iacCode.llmHeaders ?? {};
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    expect(headers["a"]).toBe("b");
  });
});
