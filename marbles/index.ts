// Public marble harness: `import { verifyAguiStream, a2aFrames, trace } from "agui-gateway/marbles"`.
export * from "./harness.js";
export * from "../operators/verify/index.js";
