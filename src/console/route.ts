// Serves the built web console (dist/console) under /console: the page, its bundled assets and a tiny
// config document that pre-fills the workspace field. Everything else under /console is a JSON 404.
import { readFile } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import type { Context, Middleware, Next } from "koa";
import { resolveAcceptLanguage } from "../i18n/index.js";
import { errorEnvelope, type GatewayError } from "../errors.js";
import { httpErrors } from "../http/errors.js";

export interface ConsoleRouteOptions {
  /** The Vite output folder: index.html plus assets/. */
  distDir: string;
  /** Default workspace shown in the page (the server's working directory). */
  cwd: string;
  demo: boolean;
}

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".map": "application/json; charset=utf-8",
  ".woff2": "font/woff2",
};

/**
 * The page runs only its own bundled script and stylesheet and talks only to its own origin (the gateway):
 * no inline script or style, no plugins, no framing by any page, no form posting anywhere. Favicons are the
 * page's `data:` placeholder.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

// One plain file name: no separators, no dot-segments, nothing a resolver could walk out of assets/ with.
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

export function consoleRoutes(options: ConsoleRouteOptions): Middleware {
  const distDir = resolve(options.distDir);
  const assetsDir = join(distDir, "assets");
  const config = JSON.stringify({ cwd: options.cwd, demo: options.demo });

  return async (ctx: Context, next: Next) => {
    const path = ctx.path;
    if (path !== "/console" && !path.startsWith("/console/")) return next();
    securityHeaders(ctx);
    if (ctx.method !== "GET" && ctx.method !== "HEAD") {
      ctx.set("Allow", "GET, HEAD");
      return reply(ctx, httpErrors.methodNotAllowed());
    }
    if (path === "/console" || path === "/console/" || path === "/console/index.html") {
      return sendFile(ctx, join(distDir, "index.html"), { cache: "no-cache" });
    }
    if (path === "/console/config.json") {
      ctx.set("Cache-Control", "no-store");
      ctx.type = CONTENT_TYPES[".json"]!;
      ctx.body = config;
      return;
    }
    if (path.startsWith("/console/assets/")) {
      const name = path.slice("/console/assets/".length);
      if (ASSET_NAME.test(name) && !name.includes("..")) {
        const file = resolve(assetsDir, name);
        // Belt and braces: the name pattern already rules out traversal; the prefix check keeps it so.
        if (file.startsWith(assetsDir + sep)) return sendFile(ctx, file, { cache: "public, max-age=31536000, immutable" });
      }
    }
    return reply(ctx, httpErrors.notFound());
  };
}

async function sendFile(ctx: Context, file: string, opts: { cache: string }): Promise<void> {
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    return reply(ctx, httpErrors.notFound());
  }
  ctx.set("Cache-Control", opts.cache);
  ctx.type = CONTENT_TYPES[extname(file).toLowerCase()] ?? "application/octet-stream";
  ctx.body = body;
}

/** On every answer under /console, the JSON ones included: a browser may open any of them as a page. */
function securityHeaders(ctx: Context): void {
  ctx.set("Content-Security-Policy", CONSOLE_CSP);
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.set("X-Content-Type-Options", "nosniff");
}

function reply(ctx: Context, error: GatewayError): void {
  ctx.status = error.status;
  ctx.body = errorEnvelope(error, resolveAcceptLanguage(ctx.get("Accept-Language") || undefined));
}
