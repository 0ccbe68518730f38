// The console's CSP allows no eval. zod compiles its object parsers with `new Function` unless told not to,
// and merely probing for it is a reported violation: switch that off before any schema is built (this module
// is main.ts's first import, so it runs before @ag-ui/core defines its schemas).
import { config } from "zod/v4";

config({ jitless: true });
