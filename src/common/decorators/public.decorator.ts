import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'gateway:isPublic';
/** Opts a route out of API-key authentication (health, admin, metrics use their own rules). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
