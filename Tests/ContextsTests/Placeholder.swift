// Placeholder until this target is built.
