import { startRgw } from '@agent-state/test-services'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import type { TestProject } from 'vitest/node'
import type { S3TestConfig } from './s3-config.js'

/** Starts one private Ceph RGW for the run and creates the test bucket in it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const rgw = await startRgw()
  try {
    const config: S3TestConfig = {
      endpoint: rgw.endpoint,
      region: rgw.region,
      forcePathStyle: true,
      bucket: 'agent-state-test',
      credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
    }
    const client = new S3Client({
      endpoint: config.endpoint,
      region: config.region,
      forcePathStyle: true,
      credentials: config.credentials,
    })
    await client.send(new CreateBucketCommand({ Bucket: config.bucket }))
    client.destroy()
    project.provide('s3', config)
  } catch (error) {
    await rgw.stop()
    throw error
  }
  return () => rgw.stop()
}
