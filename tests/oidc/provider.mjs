// A real OpenID Connect provider for the tests: npm's oidc-provider (the
// certified Node.js implementation) on loopback, with its development
// sign-in pages (any password; the login names an account below).
//
//   node tests/oidc/provider.mjs SETTINGS.json
//
// SETTINGS.json: {"clients": [{client_id, client_secret, redirect_uris}],
// "accounts": {"ann": {"email", "email_verified", "groups", "name"}},
// "tamper": {"mallory": "audience"}}. The provider listens on a free port of
// 127.0.0.1 and prints one line, "issuer http://127.0.0.1:PORT", once it
// answers; it stops when its standard input closes (the test that started
// it has ended).
//
// "tamper" names accounts whose ID token the provider changes after it made
// it, to prove that Jobdeck refuses it: "signature" changes a claim and
// keeps the signature; "audience", "expired", "nonce" and "issuer" change
// that claim and sign again with the provider's own key (so only the claim
// is wrong).

import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT } from 'jose';
import Provider from 'oidc-provider';

const settings = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const tamper = settings.tamper ?? {};

// The provider's signing key, made here so the tampering below can sign
// with it too.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingJwk = { ...privateKey.export({ format: 'jwk' }), kid: 'tests-1', alg: 'RS256', use: 'sig' };

function base64url(text) {
  return Buffer.from(text).toString('base64url');
}

async function tampered(idToken, how) {
  const claims = decodeJwt(idToken);
  const header = decodeProtectedHeader(idToken);
  if (how === 'signature') {
    const [head, , signature] = idToken.split('.');
    return `${head}.${base64url(JSON.stringify({ ...claims, email: 'root@example.com' }))}.${signature}`;
  }
  const now = Math.floor(Date.now() / 1000);
  const changes = {
    audience: { aud: 'another-client' },
    expired: { iat: now - 7200, exp: now - 3600 },
    nonce: { nonce: 'a-nonce-from-another-sign-in' },
    issuer: { iss: 'http://127.0.0.1:1' },
  }[how];
  if (!changes) throw new Error(`unknown tampering ${how}`);
  const key = await importJWK(signingJwk, 'RS256');
  return new SignJWT({ ...claims, ...changes }).setProtectedHeader(header).sign(key);
}

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: settings.clients.map((client) => ({
      grant_types: ['authorization_code'],
      response_types: ['code'],
      ...client,
    })),
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    scopes: ['openid', 'profile', 'email', 'groups'],
    pkce: { required: () => true },
    jwks: { keys: [signingJwk] },
    cookies: { keys: ['jobdeck-tests-only'] },
    async findAccount(ctx, id) {
      const account = settings.accounts[id];
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: account.sub ?? id, preferred_username: id, ...account };
        },
      };
    },
  });
  provider.on('server_error', (ctx, error) => console.error('provider error:', error));
  // After the token endpoint answers: change the ID token of an account
  // named in "tamper".
  provider.use(async (ctx, next) => {
    await next();
    const idToken = ctx.path === '/token' && ctx.body && ctx.body.id_token;
    const how = idToken && tamper[decodeJwt(idToken).sub];
    if (how) ctx.body = { ...ctx.body, id_token: await tampered(idToken, how) };
  });
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
