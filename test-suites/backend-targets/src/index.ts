export {
  type BackendFactory,
  type BackendFixture,
  type BackendTargetsOptions,
  backendTargets,
} from './backends.js'
export { childArgs, preparedChildArgs } from './child-bundle.js'
export {
  type ChildEnd,
  packageDir,
  runChild,
  type TsRunner,
  tsRunner,
} from './child-process.js'
export { type BackendServersOptions, startBackendServers } from './global-setup.js'
export {
  type ChildBackend,
  freshName,
  type PostgresTestConfig,
  postgresChildBackend,
  postgresConfig,
  type RedisTestConfig,
  redisChildBackend,
  redisConfig,
  type S3TestConfig,
  s3ChildBackend,
  s3Config,
} from './services.js'
export { describeEachBackend, type SharedBackend, sharedBackend } from './shared-backend.js'
export { MULTI_PROCESS_BACKENDS, type MultiProcessBackend, type UrlTarget } from './url-targets.js'
