extension Schema {
    /// A schema of typed models' entities (``CairnModel/entity``), plus untyped ones.
    ///
    /// ```swift
    /// let schema = try Schema(models: [Person.self, Item.self])
    /// ```
    ///
    /// - Throws: ``SchemaError`` as ``init(_:)``.
    public init(models: [any CairnModel.Type], entities: [EntityDescription] = []) throws(SchemaError) {
        try self.init(models.map { $0.entityDescription } + entities)
    }
}

extension CairnModel {
    /// The model's entity as the schema holds it (``ModelEntity/description``).
    static var entityDescription: EntityDescription { entity.description }
}
