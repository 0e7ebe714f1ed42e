// A real OpenID Connect provider for the tests: npm's oidc-provider (the
// certified Node.js implementation) on loopback, with its development
// sign-in pages (any password; the login names an account below).
//
//   node tests/oidc/provider.mjs SETTINGS.json
//
// SETTINGS.json: {"clients": [{client_id, client_secret, redirect_uris}],
// "accounts": {"ann": {"email", "email_verified", "groups", "name"}}}. The
// provider listens on a free port of 127.0.0.1 and prints one line,
// "issuer http://127.0.0.1:PORT", once it answers; it stops when its
// standard input closes (the test that started it has ended).

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const settings = JSON.parse(readFileSync(process.argv[2], 'utf8'));

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
  // The development pages warn once that they are not for production.
  provider.on('server_error', (ctx, error) => console.error('provider error:', error));
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
