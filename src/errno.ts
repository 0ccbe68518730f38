// The one reader of a Node system error's `code` ("ENOENT", "ELOOP", …), for any thrown value.
export function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}
