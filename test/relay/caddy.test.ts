// docs/deploy/Caddyfile as shipped (with a certificate of its own instead of automatic HTTPS), run by Debian 12's
// Caddy in front of a relay: the same checks as nginx.test.ts. Installs Caddy with apt-get when it is missing
// (test/support/setup-proxies.sh); skips loudly where it cannot.
import { describeBehindProxy } from "../support/behindProxy";

describeBehindProxy("caddy", "docs/deploy/Caddyfile", "Debian's Caddy");
