export { ensureDebianPackages } from './debian-packages.js'
export { freePort } from './free-port.js'
