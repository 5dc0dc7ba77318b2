/** When the postgres causes apply: PostgreSQL in the service's technologies, or an alert named as the community rules name PostgreSQL alerts (`PostgresqlDown`, `PostgresqlTooManyConnections`, …). */
export const POSTGRES = { technologies: ['postgres', 'postgresql'], alerts: ['Postgres*', 'Pg*'] };
