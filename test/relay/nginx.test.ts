// docs/deploy/nginx.conf as shipped, run by Debian 12's nginx in front of a relay: TLS, streamed completions, the
// console's live socket, Socket Mode, per-client rate limits and logged addresses, the __Host- cookie, body limits.
// Installs nginx with apt-get when it is missing (test/support/setup-proxies.sh); skips loudly where it cannot.
import { describeBehindProxy } from "../support/behindProxy";

describeBehindProxy("nginx", "docs/deploy/nginx.conf", "Debian's nginx");
