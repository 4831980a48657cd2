/**
 * A self-signed serving certificate for loopback test servers, written by openssl (Node has no
 * API to issue X.509 certificates). The e2e environment's API server, the fault proxy and the
 * unit tests' HTTP/2 server each make one.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** What the certificate names and how long it lives. */
export interface CertificateSubject {
  commonName: string;
  /** openssl's form, e.g. `IP:127.0.0.1,DNS:localhost`. */
  subjectAltName: string;
  days: number;
}

/**
 * Writes `<name>.crt` and `<name>.key` (P-256) into `dir`; throws with openssl's own words when
 * it fails.
 */
export function writeSelfSignedCertificate(
  dir: string,
  name: string,
  subject: CertificateSubject,
): { certPath: string; keyPath: string } {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        String(subject.days),
        '-subj',
        `/CN=${subject.commonName}`,
        '-addext',
        `subjectAltName=${subject.subjectAltName}`,
        '-keyout',
        keyPath,
        '-out',
        certPath,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`openssl could not create a certificate: ${stderr || error}`);
  }
  return { certPath, keyPath };
}
