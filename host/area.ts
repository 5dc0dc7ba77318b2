import type { Server } from 'restify';
import type { Guard } from './http/guard.ts';
import type { Logger } from './log.ts';

/** What an area needs to register its routes: the server, the log and the authorisation checks. */
export interface Http {
  readonly server: Server;
  readonly log: Logger;
  readonly guard: Guard;
}

/**
 * An area of the host as the composition root sees it: built by its factory
 * (`host/<area>/<area>.area.ts`) from what it needs, in dependency order, it registers its own
 * routes once the guard exists. Its services are the other members of what the factory returns.
 */
export interface Area {
  routes(http: Http): void;
}
