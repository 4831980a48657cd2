/**
 * The secrets an apiserver needs to start, written into its state folder: a serving certificate
 * (so clients verify TLS for real instead of skipping it), a service-account signing key pair
 * (the apiserver refuses to start without one) and a static token file (the simplest
 * authenticator that still goes through authentication and RBAC like a real client).
 *
 * Generated per environment, never committed: nothing here is a secret worth keeping.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeSelfSignedCertificate } from '../../support/self-signed-certificate.js';

/** The user every test talks as: in `system:masters`, so it may do anything, like a cluster admin. */
export const adminUser = 'pool-e2e-admin';
/**
 * A user with no groups beyond `system:authenticated`: RBAC grants it nothing until a test binds a
 * Role to it, so a test can prove the project's Role manifest is sufficient.
 */
export const unprivilegedUser = 'pool-e2e-unprivileged';

/** Days the serving certificate is valid: an environment lives for one test run. */
const certificateValidityDays = 7;

export interface Credentials {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly serviceAccountPublicKeyFile: string;
  readonly serviceAccountPrivateKeyFile: string;
  readonly tokenFile: string;
  readonly adminToken: string;
  readonly unprivilegedToken: string;
}

function newToken(): string {
  return randomBytes(24).toString('hex');
}

/**
 * Writes the credentials into `dir`. The serving certificate is self-signed for 127.0.0.1 and
 * localhost and doubles as the CA that kubeconfigs trust (Node has no API to issue X.509
 * certificates, so openssl does it).
 */
export function writeCredentials(dir: string): Credentials {
  const { certPath: certFile, keyPath: keyFile } = writeSelfSignedCertificate(dir, 'serving', {
    commonName: '127.0.0.1',
    subjectAltName: 'IP:127.0.0.1,DNS:localhost',
    days: certificateValidityDays,
  });

  const serviceAccount = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const serviceAccountPrivateKeyFile = join(dir, 'service-account.key');
  const serviceAccountPublicKeyFile = join(dir, 'service-account.pub');
  writeFileSync(
    serviceAccountPrivateKeyFile,
    serviceAccount.privateKey.export({ type: 'pkcs8', format: 'pem' }),
    { mode: 0o600 },
  );
  writeFileSync(
    serviceAccountPublicKeyFile,
    serviceAccount.publicKey.export({ type: 'spki', format: 'pem' }),
  );

  // Static token file format: token,user,uid,"group1,group2"
  const adminToken = newToken();
  const unprivilegedToken = newToken();
  const tokenFile = join(dir, 'tokens.csv');
  writeFileSync(
    tokenFile,
    `${adminToken},${adminUser},${adminUser},"system:masters"\n` +
      `${unprivilegedToken},${unprivilegedUser},${unprivilegedUser}\n`,
    { mode: 0o600 },
  );

  return {
    caFile: certFile,
    certFile,
    keyFile,
    serviceAccountPublicKeyFile,
    serviceAccountPrivateKeyFile,
    tokenFile,
    adminToken,
    unprivilegedToken,
  };
}
