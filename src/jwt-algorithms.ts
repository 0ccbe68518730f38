// The JWS algorithms a user token may be signed with: shared by the option table (what --auth-jwt-algorithms accepts)
// and the verifier, so the configuration does not depend on the HTTP layer.

/** Asymmetric JWS algorithms: a key that verifies can never sign, so a public key cannot be turned into a secret. */
export const ASYMMETRIC_ALGORITHMS: readonly string[] = [
  "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519",
];
