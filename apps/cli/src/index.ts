export { main } from './main.js'
export { type VerifyOptions, verify } from './verify.js'
