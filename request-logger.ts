import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];

/**
 * `request.log`: the request's child logger (its lines carry `reqId`), made when something first
 * logs through it. Most requests only get the one line the onResponse hook writes, through the
 * root logger with the id in it, so making a pino child for every request (an object, its bindings
 * serialized) would be spent for nothing.
 */
export class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.options?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]): void {
    const logger = this.logger;
    Reflect.apply(logger.fatal, logger, args);
  }

  error(...args: unknown[]): void {
    const logger = this.logger;
    Reflect.apply(logger.error, logger, args);
  }

  warn(...args: unknown[]): void {
    const logger = this.logger;
    Reflect.apply(logger.warn, logger, args);
  }

  info(...args: unknown[]): void {
    const logger = this.logger;
    Reflect.apply(logger.info, logger, args);
  }

  debug(...args: unknown[]): void {
    const logger = this.logger;
    Reflect.apply(logger.debug, logger, args);
  }

  trace(...args: unknown[]): void {
    const logger = this.logger;
    Reflect.apply(logger.trace, logger, args);
  }

  silent(...args: unknown[]): void {
    const logger = this.logger;
    Reflect.apply(logger.silent, logger, args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}
