/** When the mysql causes apply: MariaDB or MySQL in the service's technologies, or an alert named as the community rules name them (`MysqlDown`, `MysqlTooManyConnections(>80%)`, …). */
export const MYSQL = { technologies: ['mysql', 'mariadb'], alerts: ['Mysql*', 'MySQL*', 'Mariadb*', 'MariaDB*'] };
