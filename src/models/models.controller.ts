import { Controller, Get } from '@nestjs/common';
import { CatalogService } from './catalog.service';

@Controller('v1/models')
export class ModelsController {
  constructor(private readonly catalog: CatalogService) {}

  @Get()
  list() {
    return this.catalog.listing();
  }
}
