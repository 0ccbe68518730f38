// The one logger of every test and the soak: pino at level "silent" (the gateway's log calls still run).
import pino from "pino";

export const silentLogger = pino({ level: "silent" });
