/** When the redis causes apply: a Redis in the service's technologies, or an alert named as the community rules name Redis alerts (`RedisDown`, `RedisOutOfConfiguredMaxmemory`, …). */
export const REDIS = { technologies: ['redis'], alerts: ['Redis*'] };
