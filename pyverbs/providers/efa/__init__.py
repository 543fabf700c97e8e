# pyverbs.providers.efa: the EFA provider's package (its enum module, efa_enums).
