/** Node's codes for a server certificate the client does not trust or that does not match. */
const TLS_REFUSED =
  /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|CERT_\w+|ERR_TLS_CERT_ALTNAME_INVALID)$/;

/** True when `code` says the server's certificate was refused: a misconfiguration, not an outage. */
export function isTlsRefused(code: string | undefined): boolean {
  return code !== undefined && TLS_REFUSED.test(code);
}
