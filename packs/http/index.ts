import type { PackPlugin } from '../../host/plugins/contract.ts';
import { endpointDown } from './causes/endpoint-down.ts';

/** The `http` pack: causes read with a GET of the service's own addresses. See README.md. */
const pack: PackPlugin = { causes: [endpointDown] };

export default pack;
