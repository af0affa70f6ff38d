/// Writing pending changes: deletes, inserts, updates of changed columns only, join-table links, positions.
extension Context {
    /// Writes every pending change to the store, inside the current write transaction.
    ///
    /// You rarely need to call it: ``Store/write(_:)-(Context)->T`` saves when its closure returns, and the
    /// context saves before each query. Only the columns of changed fields are written; objects without
    /// changes are not written at all. If a write fails (an identity conflict, say), the store is left as it
    /// was before this save and the error is thrown.
    /// - Throws: ``StoreError`` (``StoreError/Code/identityConflict``, ``StoreError/Code/readOnly``) or
    ///   ``SQLiteError``.
    public func save() throws {
        if isReadOnly { throw StoreError.readOnly("save") }
        try flush()
    }

    /// Saves, then lets go of every object the context holds, so that a long write (a hand-written import
    /// loop) keeps memory flat. Objects you still hold afterwards are detached: their relationships are
    /// emptied and they are no longer tracked; fetch them again to go on.
    ///
    /// ```swift
    /// try store.write { context in
    ///     for page in pages {
    ///         _ = try decoder.decode([Issue].self, from: page, into: context)
    ///         try context.saveAndForgetObjects()
    ///     }
    /// }
    /// ```
    public func saveAndForgetObjects() throws {
        try save()
        reset()
    }

    /// Writes pending changes. With `usingSavepoint`, a failure leaves nothing behind (the context's caller
    /// may catch the error and go on); without, the caller rolls back a larger scope itself (the end of a
    /// write, an import batch), and SQLite keeps no statement journal for what may be a very large save.
    func flush(usingSavepoint: Bool = true) throws {
        guard !isReadOnly else { return }
        if let error = deferredError {
            deferredError = nil
            throw error
        }
        guard hasChanges else { return }
        for object in insertedObjects { touchedEntities.insert(object.entityState.entityIndex) }
        for object in updatedObjects { touchedEntities.insert(object.entityState.entityIndex) }
        for (entity, _) in deletedObjects { touchedEntities.insert(entity) }
        for change in linkChanges {
            touchedEntities.insert(model.joinTables[change.table].source)
            touchedEntities.insert(model.joinTables[change.table].target)
        }
        // A savepoint makes a failed flush leave nothing behind, so the caller may fix things and retry.
        let write = {
            try self.writeDeletes()
            try self.writeInserts()
            try self.writeUpdates()
            try self.writeLinks()
            try self.writePositions()
        }
        if usingSavepoint {
            try connection.inSavepoint(named: "codablestore_save", write)
        } else {
            try write()
        }
        // Only now that everything is written does the in-memory state move on.
        var inserted = Array(repeating: 0, count: model.mappings.count)
        for object in insertedObjects {
            let state = object.entityState
            guard state.status == .inserted else { continue }
            state.status = .persistent
            state.changedFields.removeAll()
            inserted[state.entityIndex] += 1
        }
        for (entity, count) in inserted.enumerated() where count > 0 {
            writeCounts[entity, default: (0, 0)].inserted += count
            materializedCounts[entity] += count
        }
        for object in updatedObjects {
            let state = object.entityState
            state.isScheduledForUpdate = false
            if state.status == .persistent, !state.changedFields.isEmpty {
                writeCounts[state.entityIndex, default: (0, 0)].updated += 1
            }
            state.changedFields.removeAll()
        }
        insertedObjects.removeAll(keepingCapacity: true)
        updatedObjects.removeAll(keepingCapacity: true)
        deletedObjects.removeAll()
        linkChanges.removeAll()
    }

    private func writeDeletes() throws {
        for (entity, rowID) in deletedObjects {
            let statement = try connection.cachedStatement(
                sql: "DELETE FROM \(quoteIdentifier(model.mappings[entity].name)) WHERE \"_pk\" = ?")
            try statement.bind(rowID, at: 1)
            try statement.execute()
        }
    }

    /// Inserts new objects, grouped by entity, several rows per statement (as a hand-written importer
    /// would): fewer statement executions for SQLite to run. Foreign keys are checked at commit, so any order
    /// is correct; parents go first (``StoreModel/insertOrder``) because a child row inserted before its
    /// parent costs a deferred violation, and the parent's insert then a search of the child table.
    private func writeInserts() throws {
        var byEntity: [[any EntityObject]] = Array(repeating: [], count: model.mappings.count)
        for object in insertedObjects where object.entityState.status == .inserted {
            byEntity[object.entityState.entityIndex].append(object)
        }
        for entity in model.insertOrder where !byEntity[entity].isEmpty {
            let objects = byEntity[entity]
            let mapping = model.mappings[entity]
            let fits = EntityMapping.insertBatchRows * (mapping.insertColumnCount + 1) <= connection.maximumVariableCount
            let rowsPerStatement = fits ? EntityMapping.insertBatchRows : 1
            var start = 0
            while start < objects.count {
                let rows = objects.count - start >= rowsPerStatement ? rowsPerStatement : 1
                let chunk = objects[start..<(start + rows)]
                let statement = try connection.cachedStatement(sql: mapping.insertSQL(rows: rows))
                var parameter: Int32 = 1
                for object in chunk { try bindInsert(object, mapping, statement, &parameter) }
                do {
                    try statement.execute()
                } catch let error as SQLiteError where error.resultCode.rawValue == 2067 /* SQLITE_CONSTRAINT_UNIQUE */ {
                    // Find the object whose identity is taken, row by row. INSERT OR FAIL kept the rows before
                    // the failing one: those fail again on their row id (ours, so only they can), and are skipped.
                    let single = try connection.cachedStatement(sql: mapping.insertSQL(rows: 1))
                    for object in chunk {
                        var parameter: Int32 = 1
                        try bindInsert(object, mapping, single, &parameter)
                        do {
                            try single.execute()
                        } catch let error as SQLiteError where error.resultCode.rawValue == 2067 {
                            throw identityConflict(object, mapping, error)
                        } catch let error as SQLiteError where error.resultCode.rawValue == 1555 /* PRIMARYKEY */ {
                            continue
                        }
                    }
                    throw identityConflict(chunk[chunk.startIndex], mapping, error)
                }
                start += rows
            }
        }
    }

    /// Binds one row of an INSERT: the row id, then attributes through their typed closures, and foreign
    /// keys as the destination's row id.
    private func bindInsert(_ object: any EntityObject, _ mapping: EntityMapping, _ statement: Statement, _ parameter: inout Int32) throws {
        try statement.bind(object.entityState.rowID, at: parameter)
        parameter += 1
        for binder in mapping.insertBinders {
            switch binder {
            case .attribute(let bind): try bind(object, statement, parameter)
            case .foreignKey(let position): try bind(mapping.columns[position], of: object, to: statement, at: parameter)
            }
            parameter += 1
        }
    }

    private func bind(_ column: EntityMapping.Column, of object: any EntityObject, to statement: Statement, at index: Int32) throws {
        switch column.kind {
        case .attribute(let attribute):
            try attribute.bindValue(object, statement, index)
        case .foreignKey(let relationship, _):
            let state = object.entityState
            if state.unloadedRelationships.contains(relationship.index), let rowID = state.foreignKeys[relationship.index] {
                try statement.bind(rowID, at: index)
            } else if let destination = relationship.getOne(object),
                destination.entityState.status == .inserted || destination.entityState.status == .persistent
            {
                try statement.bind(destination.entityState.rowID, at: index)
            } else {
                try statement.bindNull(at: index)
            }
        case .order:
            try statement.bindNull(at: index)
        }
    }

    private func writeUpdates() throws {
        for object in updatedObjects {
            let state = object.entityState
            guard state.status == .persistent else { continue }
            let mapping = model.mappings[state.entityIndex]
            var columns = FieldSet()
            for field in state.changedFields.indexes where mapping.columnNameOfField[field] != nil {
                columns.insert(field)
            }
            if columns.isEmpty { continue }
            let key = UpdateKey(entity: mapping.index, fields: columns)
            let fields = columns.indexes
            let sql: String
            if let cached = updateSQLCache[key] {
                sql = cached
            } else {
                sql = "UPDATE \(quoteIdentifier(mapping.name)) SET "
                    + fields.map { "\(quoteIdentifier(mapping.columnNameOfField[$0]!)) = ?" }.joined(separator: ", ")
                    + " WHERE \"_pk\" = ?"
                updateSQLCache[key] = sql
            }
            let statement = try connection.cachedStatement(sql: sql)
            for (offset, field) in fields.enumerated() {
                let column = mapping.columns[Int(mapping.columnOfField[field]) - 1]
                try bind(column, of: object, to: statement, at: Int32(offset + 1))
            }
            try statement.bind(state.rowID, at: Int32(fields.count + 1))
            do {
                try statement.execute()
            } catch let error as SQLiteError where error.resultCode.rawValue == 2067 {
                throw identityConflict(object, mapping, error)
            }
        }
    }

    /// Writes link changes in order; a run of links to one table goes 32 rows per statement.
    private func writeLinks() throws {
        var start = 0
        while start < linkChanges.count {
            let first = linkChanges[start]
            let join = model.joinTables[first.table]
            guard first.isLink else {
                let statement = try connection.cachedStatement(sql: join.unlinkSQL)
                try statement.bind(first.source, at: 1)
                try statement.bind(first.target, at: 2)
                try statement.execute()
                start += 1
                continue
            }
            var end = start + 1
            while end < linkChanges.count, end - start < JoinTable.linkBatchRows, linkChanges[end].isLink,
                linkChanges[end].table == first.table
            {
                end += 1
            }
            let rows = end - start == JoinTable.linkBatchRows ? JoinTable.linkBatchRows : 1
            if rows == 1 { end = start + 1 }
            let statement = try connection.cachedStatement(sql: rows == 1 ? join.linkSQL : join.linkBatchSQL)
            var parameter: Int32 = 1
            for change in linkChanges[start..<end] {
                try statement.bind(change.source, at: parameter)
                try statement.bind(change.target, at: parameter + 1)
                if join.hasPosition, let position = position(of: change.target, in: change.source, join) {
                    try statement.bind(Int64(position), at: parameter + 2)
                } else {
                    try statement.bindNull(at: parameter + 2)
                }
                parameter += 3
            }
            try statement.execute()
            start = end
        }
    }

    /// The position of `target` in the loaded ordered relationship of `source` that owns `join`.
    private func position(of target: Int64, in source: Int64, _ join: JoinTable) -> Int? {
        guard let owner = registries[join.source][source] else { return nil }
        let mapping = model.mappings[join.source]
        for case let relationship? in mapping.relationships {
            guard case .joinTable(join.index, ownerIsSource: true) = relationship.storage else { continue }
            if owner.entityState.unloadedRelationships.contains(relationship.description.index) { return nil }
            return relationship.description.getMany(owner).firstIndex { $0.entityState.rowID == target }
        }
        return nil
    }

    /// Rewrites positions of ordered relationships whose order changed on stored objects.
    private func writePositions() throws {
        for object in updatedObjects {
            let state = object.entityState
            guard state.status == .persistent else { continue }
            let mapping = model.mappings[state.entityIndex]
            for field in state.changedFields.indexes {
                guard let relationship = mapping.relationships[field], relationship.description.isOrdered,
                    !state.unloadedRelationships.contains(field)
                else { continue }
                let members = relationship.description.getMany(object)
                switch relationship.storage {
                case .inverseForeignKey(_, let orderColumn?):
                    try writeOrderColumn(orderColumn, of: members, in: model.mappings[relationship.destination])
                case .joinTable(let index, ownerIsSource: true) where model.joinTables[index].hasPosition:
                    let statement = try connection.cachedStatement(
                        sql: "UPDATE \(quoteIdentifier(model.joinTables[index].name)) SET \"position\" = ? WHERE \"source\" = ? AND \"target\" = ?")
                    for (position, member) in members.enumerated() {
                        try statement.bind(Int64(position), at: 1)
                        try statement.bind(state.rowID, at: 2)
                        try statement.bind(member.entityState.rowID, at: 3)
                        try statement.execute()
                    }
                default:
                    continue
                }
            }
        }
        // Positions of new objects' ordered relationships stored by a foreign key.
        guard model.hasOrderedForeignKeyRelationships else { return }
        for object in insertedObjects where object.entityState.status == .inserted {
            let mapping = model.mappings[object.entityState.entityIndex]
            if !mapping.hasRelationships { continue }
            for case let relationship? in mapping.relationships {
                guard case .inverseForeignKey(_, let orderColumn?) = relationship.storage else { continue }
                let members = relationship.description.getMany(object)
                if members.isEmpty { continue }
                try writeOrderColumn(orderColumn, of: members, in: model.mappings[relationship.destination])
            }
        }
    }

    /// Writes each member's position in an ordered one-to-many relationship into its order column.
    private func writeOrderColumn(_ orderColumn: String, of members: [any EntityObject], in destination: EntityMapping) throws {
        let statement = try connection.cachedStatement(
            sql: "UPDATE \(quoteIdentifier(destination.name)) SET \(quoteIdentifier(orderColumn)) = ? WHERE \"_pk\" = ?")
        for (position, member) in members.enumerated() {
            try statement.bind(Int64(position), at: 1)
            try statement.bind(member.entityState.rowID, at: 2)
            try statement.execute()
        }
    }

    private func identityConflict(_ object: any EntityObject, _ mapping: EntityMapping, _ error: SQLiteError) -> StoreError {
        let values = mapping.description.identity.map { field -> String in
            guard case .attribute(let attribute) = mapping.description.fields[field] else { return "?" }
            return "\(attribute.name) = \(attribute.value(of: object))"
        }
        return StoreError(
            .identityConflict,
            "\(mapping.name) with identity \(values.joined(separator: ", ")) already exists; fetch it and update it instead of inserting a new object",
            entity: mapping.name, cause: error)
    }
}
