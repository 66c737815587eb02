// GENERATED from the shared scenario files (copied to Tests/CairnToolTests/Scenarios/):
// each literal is one file's text, indented twelve spaces. Do not edit by hand; when a file
// changes, paste it in again. ScenarioTests checks that `cairn policies` and
// `cairn policies --scenarios Tests/CairnToolTests/Scenarios` print the same rows.
//
// Embedded rather than a bundled resource: `Bundle.module` of an executable stops the process
// when the resource bundle is not next to the binary, and `cairn` must work once copied.

/// The canonical merge scenarios that `cairn policies` runs, in the order of the
/// contract's tables.
enum CanonicalScenarios {
    /// File name and text of each scenario.
    static let all: [(file: String, text: String)] = [
        (file: "update-update-different-properties.json", text: #"""
            {
              "name": "update-update-different-properties",
              "description": "A and B both change the same person: B changes age and saves first, then A changes city.",
              "entities": {
                "Person": {
                  "name": "string",
                  "age": "int",
                  "city": "string?"
                }
              },
              "store": {
                "p": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "age": 30,
                    "city": "Oslo"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "age": 31
                  }
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "city": "Rome"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Rome"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Rome"
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 30,
                      "city": "Rome"
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                }
              }
            }
            """#),
        (file: "update-update-same-property.json", text: #"""
            {
              "name": "update-update-same-property",
              "description": "A and B both change age: B saves 31 first, then A saves 40.",
              "entities": {
                "Person": {
                  "name": "string",
                  "age": "int",
                  "city": "string?"
                }
              },
              "store": {
                "p": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "age": 30,
                    "city": "Oslo"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "age": 31
                  }
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "age": 40
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 40,
                      "city": "Oslo"
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 40,
                      "city": "Oslo"
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                }
              }
            }
            """#),
        (file: "update-vs-store-delete.json", text: #"""
            {
              "name": "update-vs-store-delete",
              "description": "B deletes the person and saves; A, still holding it, changes age and saves.",
              "entities": {
                "Person": {
                  "name": "string",
                  "age": "int",
                  "city": "string?"
                }
              },
              "store": {
                "p": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "age": 30,
                    "city": "Oslo"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "delete",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "age": 40
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 40,
                      "city": "Oslo"
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 40,
                      "city": "Oslo"
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                }
              }
            }
            """#),
        (file: "delete-vs-store-update.json", text: #"""
            {
              "name": "delete-vs-store-update",
              "description": "B changes age and saves; A, still holding the old version, deletes the person and saves.",
              "entities": {
                "Person": {
                  "name": "string",
                  "age": "int",
                  "city": "string?"
                }
              },
              "store": {
                "p": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "age": 30,
                    "city": "Oslo"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "age": 31
                  }
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "delete",
                  "ref": "p"
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "age": 31,
                      "city": "Oslo"
                    }
                  }
                }
              }
            }
            """#),
        (file: "delete-both.json", text: #"""
            {
              "name": "delete-both",
              "description": "A and B both delete the person; the second delete is not a conflict.",
              "entities": {
                "Person": {
                  "name": "string",
                  "age": "int",
                  "city": "string?"
                }
              },
              "store": {
                "p": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "age": 30,
                    "city": "Oslo"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "delete",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "delete",
                  "ref": "p"
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": null
                  }
                }
              }
            }
            """#),
        (file: "constraint-insert-duplicate.json", text: #"""
            {
              "name": "constraint-insert-duplicate",
              "description": "A inserts a person with the email of a stored one (constraint [email]); the stored object keeps its ID.",
              "entities": {
                "Person": {
                  "attributes": {
                    "name": "string",
                    "email": "string?",
                    "city": "string?"
                  },
                  "uniquenessConstraints": [
                    [
                      "email"
                    ]
                  ]
                }
              },
              "store": {
                "p": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "email": "ann@example.com",
                    "city": "Oslo"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "insert",
                  "ref": "q",
                  "entity": "Person",
                  "values": {
                    "name": "Anne",
                    "email": "ann@example.com"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "conflict"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "q": null
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "q": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    },
                    "q": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    },
                    "q": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "q": null
                  }
                }
              }
            }
            """#),
        (file: "constraint-change-duplicate.json", text: #"""
            {
              "name": "constraint-change-duplicate",
              "description": "A changes Bo's email to Ann's: Bo is merged into the stored Ann (whose ID stays) or the change is discarded.",
              "entities": {
                "Person": {
                  "attributes": {
                    "name": "string",
                    "email": "string?",
                    "city": "string?"
                  },
                  "uniquenessConstraints": [
                    [
                      "email"
                    ]
                  ]
                }
              },
              "store": {
                "p": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "email": "ann@example.com",
                    "city": "Oslo"
                  }
                },
                "r": {
                  "entity": "Person",
                  "values": {
                    "name": "Bo",
                    "email": "bo@example.com",
                    "city": "Rome"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "r"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "r",
                  "values": {
                    "email": "ann@example.com"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "conflict"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "r": {
                      "name": "Bo",
                      "email": "bo@example.com",
                      "city": "Rome"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "r": null
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "r": null
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Bo",
                      "email": "ann@example.com",
                      "city": "Rome"
                    },
                    "r": null
                  }
                },
                "rollback": {
                  "saves": [
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "r": {
                      "name": "Bo",
                      "email": "bo@example.com",
                      "city": "Rome"
                    }
                  }
                }
              }
            }
            """#),
        (file: "constraint-concurrent-inserts.json", text: #"""
            {
              "name": "constraint-concurrent-inserts",
              "description": "A and B insert a person with the same email; A saves first, so B's save meets A's object.",
              "entities": {
                "Person": {
                  "attributes": {
                    "name": "string",
                    "email": "string?",
                    "city": "string?"
                  },
                  "uniquenessConstraints": [
                    [
                      "email"
                    ]
                  ]
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "insert",
                  "ref": "a",
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "email": "ann@example.com",
                    "city": "Oslo"
                  }
                },
                {
                  "in": "B",
                  "do": "insert",
                  "ref": "b",
                  "entity": "Person",
                  "values": {
                    "name": "Anne",
                    "email": "ann@example.com"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                },
                {
                  "in": "B",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "a": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "b": null
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "a": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "b": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "a": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    },
                    "b": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "a": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    },
                    "b": {
                      "name": "Anne",
                      "email": "ann@example.com",
                      "city": null
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "a": {
                      "name": "Ann",
                      "email": "ann@example.com",
                      "city": "Oslo"
                    },
                    "b": null
                  }
                }
              }
            }
            """#),
        (file: "constraint-duplicate-in-one-save.json", text: #"""
            {
              "name": "constraint-duplicate-in-one-save",
              "description": "A inserts two people with the same email in one save: a validation error under every policy.",
              "entities": {
                "Person": {
                  "attributes": {
                    "name": "string",
                    "email": "string?",
                    "city": "string?"
                  },
                  "uniquenessConstraints": [
                    [
                      "email"
                    ]
                  ]
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "insert",
                  "ref": "a",
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "email": "ann@example.com"
                  }
                },
                {
                  "in": "A",
                  "do": "insert",
                  "ref": "b",
                  "entity": "Person",
                  "values": {
                    "name": "Anne",
                    "email": "ann@example.com"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "a": null,
                    "b": null
                  }
                },
                "storeTrump": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "a": null,
                    "b": null
                  }
                },
                "objectTrump": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "a": null,
                    "b": null
                  }
                },
                "overwrite": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "a": null,
                    "b": null
                  }
                },
                "rollback": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "a": null,
                    "b": null
                  }
                }
              }
            }
            """#),
        (file: "relationship-move-vs-rename.json", text: #"""
            {
              "name": "a relationship change is a change of both ends",
              "description": "A moves Ann from Eng to Ops, which changes Eng too; B renames Eng from its older read. B's save conflicts on Eng (update/update): the rename is a local-only change, the membership is derived from the people's to-one.",
              "entities": {
                "Department": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "employees": {
                      "toMany": "Person",
                      "inverse": "department",
                      "deleteRule": "nullify"
                    }
                  }
                },
                "Person": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "department": {
                      "toOne": "Department",
                      "inverse": "employees",
                      "deleteRule": "nullify"
                    }
                  }
                }
              },
              "store": {
                "d": {
                  "entity": "Department",
                  "values": {
                    "name": "Eng",
                    "employees": [
                      "p1",
                      "p2"
                    ]
                  }
                },
                "d2": {
                  "entity": "Department",
                  "values": {
                    "name": "Ops",
                    "employees": []
                  }
                },
                "p1": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann",
                    "department": "d"
                  }
                },
                "p2": {
                  "entity": "Person",
                  "values": {
                    "name": "Bob",
                    "department": "d"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p1"
                },
                {
                  "in": "B",
                  "do": "fetch",
                  "ref": "d"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "p1",
                  "values": {
                    "department": "d2"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "d",
                  "values": {
                    "name": "R&D"
                  }
                },
                {
                  "in": "B",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "R&D",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "R&D",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "R&D",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                }
              }
            }
            """#),
        (file: "relationship-concurrent-additions.json", text: #"""
            {
              "name": "relationship-concurrent-additions",
              "description": "A adds Bob to Ops and B adds Ann, B first: both change Ops, so A's save conflicts on it; membership is each person's to-one, so every policy but error keeps both additions.",
              "entities": {
                "Department": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "employees": {
                      "toMany": "Person",
                      "inverse": "department",
                      "deleteRule": "nullify"
                    }
                  }
                },
                "Person": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "department": {
                      "toOne": "Department",
                      "inverse": "employees"
                    }
                  }
                }
              },
              "store": {
                "d": {
                  "entity": "Department",
                  "values": {
                    "name": "Eng",
                    "employees": [
                      "p1",
                      "p2"
                    ]
                  }
                },
                "d2": {
                  "entity": "Department",
                  "values": {
                    "name": "Ops"
                  }
                },
                "p1": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann"
                  }
                },
                "p2": {
                  "entity": "Person",
                  "values": {
                    "name": "Bob"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "d2"
                },
                {
                  "in": "B",
                  "do": "relate",
                  "ref": "d2",
                  "relationship": "employees",
                  "add": [
                    "p1"
                  ]
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "relate",
                  "ref": "d2",
                  "relationship": "employees",
                  "add": [
                    "p2"
                  ]
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": []
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d2"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": []
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d2"
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": []
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d2"
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": []
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d2"
                    }
                  }
                }
              }
            }
            """#),
        (file: "relationship-to-one-moved-twice.json", text: #"""
            {
              "name": "relationship-to-one-moved-twice",
              "description": "A and B both move Ann out of Eng: B to Ops (saved first), A to Lab. The to-one is a property changed on both sides; each department's members follow from the winner.",
              "entities": {
                "Department": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "employees": {
                      "toMany": "Person",
                      "inverse": "department",
                      "deleteRule": "nullify"
                    }
                  }
                },
                "Person": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "department": {
                      "toOne": "Department",
                      "inverse": "employees"
                    }
                  }
                }
              },
              "store": {
                "d": {
                  "entity": "Department",
                  "values": {
                    "name": "Eng",
                    "employees": [
                      "p1",
                      "p2"
                    ]
                  }
                },
                "d2": {
                  "entity": "Department",
                  "values": {
                    "name": "Ops"
                  }
                },
                "p1": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann"
                  }
                },
                "p2": {
                  "entity": "Person",
                  "values": {
                    "name": "Bob"
                  }
                },
                "d3": {
                  "entity": "Department",
                  "values": {
                    "name": "Lab"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p1"
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "p1",
                  "values": {
                    "department": "d2"
                  }
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "p1",
                  "values": {
                    "department": "d3"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    },
                    "d3": {
                      "name": "Lab",
                      "employees": []
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    },
                    "d3": {
                      "name": "Lab",
                      "employees": []
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d3"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    },
                    "d3": {
                      "name": "Lab",
                      "employees": [
                        "p1"
                      ]
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d3"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    },
                    "d3": {
                      "name": "Lab",
                      "employees": [
                        "p1"
                      ]
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": [
                        "p1"
                      ]
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d2"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    },
                    "d3": {
                      "name": "Lab",
                      "employees": []
                    }
                  }
                }
              }
            }
            """#),
        (file: "relationship-insert-to-deleted.json", text: #"""
            {
              "name": "relationship-insert-to-deleted",
              "description": "B deletes Eng (its people are nullified); A, from an older read, inserts Cy into Eng. The reference is an update/delete conflict on Eng: the store's side removes it, ours re-inserts Eng.",
              "entities": {
                "Department": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "employees": {
                      "toMany": "Person",
                      "inverse": "department",
                      "deleteRule": "nullify"
                    }
                  }
                },
                "Person": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "department": {
                      "toOne": "Department",
                      "inverse": "employees"
                    }
                  }
                }
              },
              "store": {
                "d": {
                  "entity": "Department",
                  "values": {
                    "name": "Eng",
                    "employees": [
                      "p1",
                      "p2"
                    ]
                  }
                },
                "d2": {
                  "entity": "Department",
                  "values": {
                    "name": "Ops"
                  }
                },
                "p1": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann"
                  }
                },
                "p2": {
                  "entity": "Person",
                  "values": {
                    "name": "Bob"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "d"
                },
                {
                  "in": "B",
                  "do": "delete",
                  "ref": "d"
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "insert",
                  "ref": "p3",
                  "entity": "Person",
                  "values": {
                    "name": "Cy",
                    "department": "d"
                  }
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "d": null,
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": null
                    },
                    "p2": {
                      "name": "Bob",
                      "department": null
                    },
                    "p3": null
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": null,
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": null
                    },
                    "p2": {
                      "name": "Bob",
                      "department": null
                    },
                    "p3": {
                      "name": "Cy",
                      "department": null
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p3"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": null
                    },
                    "p2": {
                      "name": "Bob",
                      "department": null
                    },
                    "p3": {
                      "name": "Cy",
                      "department": "d"
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p3"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": null
                    },
                    "p2": {
                      "name": "Bob",
                      "department": null
                    },
                    "p3": {
                      "name": "Cy",
                      "department": "d"
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": null,
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": null
                    },
                    "p2": {
                      "name": "Bob",
                      "department": null
                    },
                    "p3": {
                      "name": "Cy",
                      "department": null
                    }
                  }
                }
              }
            }
            """#),
        (file: "relationship-cascade-vs-member-update.json", text: #"""
            {
              "name": "relationship-cascade-vs-member-update",
              "description": "A deletes Eng, whose employees cascade; B renames Ann, a member, and saves first. A's cascade meets a delete/update conflict on Ann: a cancelled delete keeps her, without a department.",
              "entities": {
                "Department": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "employees": {
                      "toMany": "Person",
                      "inverse": "department",
                      "deleteRule": "cascade"
                    }
                  }
                },
                "Person": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "department": {
                      "toOne": "Department",
                      "inverse": "employees"
                    }
                  }
                }
              },
              "store": {
                "d": {
                  "entity": "Department",
                  "values": {
                    "name": "Eng",
                    "employees": [
                      "p1",
                      "p2"
                    ]
                  }
                },
                "d2": {
                  "entity": "Department",
                  "values": {
                    "name": "Ops"
                  }
                },
                "p1": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann"
                  }
                },
                "p2": {
                  "entity": "Person",
                  "values": {
                    "name": "Bob"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "d"
                },
                {
                  "in": "A",
                  "do": "delete",
                  "ref": "d"
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "p1",
                  "values": {
                    "name": "Anne"
                  }
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Anne",
                      "department": "d"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": null,
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Anne",
                      "department": null
                    },
                    "p2": null
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": null,
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": null,
                    "p2": null
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": null,
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": null,
                    "p2": null
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "d": null,
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Anne",
                      "department": null
                    },
                    "p2": null
                  }
                }
              }
            }
            """#),
        (file: "relationship-deny.json", text: #"""
            {
              "name": "relationship-deny",
              "description": "Eng's employees deny its deletion: A's save fails validation under every policy (outcome error) and writes nothing.",
              "entities": {
                "Department": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "employees": {
                      "toMany": "Person",
                      "inverse": "department",
                      "deleteRule": "deny"
                    }
                  }
                },
                "Person": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "department": {
                      "toOne": "Department",
                      "inverse": "employees"
                    }
                  }
                }
              },
              "store": {
                "d": {
                  "entity": "Department",
                  "values": {
                    "name": "Eng",
                    "employees": [
                      "p1",
                      "p2"
                    ]
                  }
                },
                "d2": {
                  "entity": "Department",
                  "values": {
                    "name": "Ops"
                  }
                },
                "p1": {
                  "entity": "Person",
                  "values": {
                    "name": "Ann"
                  }
                },
                "p2": {
                  "entity": "Person",
                  "values": {
                    "name": "Bob"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "delete",
                  "ref": "d"
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "error"
                  ],
                  "store": {
                    "d": {
                      "name": "Eng",
                      "employees": [
                        "p1",
                        "p2"
                      ]
                    },
                    "d2": {
                      "name": "Ops",
                      "employees": []
                    },
                    "p1": {
                      "name": "Ann",
                      "department": "d"
                    },
                    "p2": {
                      "name": "Bob",
                      "department": "d"
                    }
                  }
                }
              }
            }
            """#),
        (file: "relationship-many-to-many-edits.json", text: #"""
            {
              "name": "relationship-many-to-many-edits",
              "description": "A read the post's tags (swift, rust) and removes swift; B adds go and saves first. The fact is the set of links, merged link by link: storeTrump and objectTrump keep both changes, overwrite writes the tags A read with its change (so go goes), rollback takes the store's, error fails.",
              "entities": {
                "Post": {
                  "attributes": {
                    "title": "string"
                  },
                  "relationships": {
                    "tags": {
                      "toMany": "Tag",
                      "inverse": "posts"
                    }
                  }
                },
                "Tag": {
                  "attributes": {
                    "label": "string"
                  },
                  "relationships": {
                    "posts": {
                      "toMany": "Post",
                      "inverse": "tags"
                    }
                  }
                }
              },
              "store": {
                "p": {
                  "entity": "Post",
                  "values": {
                    "title": "Hello",
                    "tags": [
                      "t1",
                      "t2"
                    ]
                  }
                },
                "t1": {
                  "entity": "Tag",
                  "values": {
                    "label": "swift"
                  }
                },
                "t2": {
                  "entity": "Tag",
                  "values": {
                    "label": "rust"
                  }
                },
                "t3": {
                  "entity": "Tag",
                  "values": {
                    "label": "go"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "B",
                  "do": "relate",
                  "ref": "p",
                  "relationship": "tags",
                  "add": [
                    "t3"
                  ]
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "relate",
                  "ref": "p",
                  "relationship": "tags",
                  "remove": [
                    "t1"
                  ]
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t1",
                        "t2",
                        "t3"
                      ]
                    },
                    "t1": {
                      "label": "swift",
                      "posts": [
                        "p"
                      ]
                    },
                    "t2": {
                      "label": "rust",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "go",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t2",
                        "t3"
                      ]
                    },
                    "t1": {
                      "label": "swift",
                      "posts": []
                    },
                    "t2": {
                      "label": "rust",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "go",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t2",
                        "t3"
                      ]
                    },
                    "t1": {
                      "label": "swift",
                      "posts": []
                    },
                    "t2": {
                      "label": "rust",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "go",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t2"
                      ]
                    },
                    "t1": {
                      "label": "swift",
                      "posts": []
                    },
                    "t2": {
                      "label": "rust",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "go",
                      "posts": []
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t1",
                        "t2",
                        "t3"
                      ]
                    },
                    "t1": {
                      "label": "swift",
                      "posts": [
                        "p"
                      ]
                    },
                    "t2": {
                      "label": "rust",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "go",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                }
              }
            }
            """#),
        (file: "relationship-ordered-reorders.json", text: #"""
            {
              "name": "relationship-ordered-reorders",
              "description": "A swaps the first two songs of an ordered playlist, B the last two and saves first. The order is each song's key, a property: Two, moved by both, takes the policy's side; One, moved by A alone, keeps A's place (tied with Three's under storeTrump and rollback, broken by primary key).",
              "entities": {
                "Playlist": {
                  "attributes": {
                    "name": "string"
                  },
                  "relationships": {
                    "songs": {
                      "toMany": "Song",
                      "inverse": "playlist",
                      "ordered": true
                    }
                  }
                },
                "Song": {
                  "attributes": {
                    "title": "string"
                  },
                  "relationships": {
                    "playlist": {
                      "toOne": "Playlist",
                      "inverse": "songs"
                    }
                  }
                }
              },
              "store": {
                "l": {
                  "entity": "Playlist",
                  "values": {
                    "name": "Mix",
                    "songs": [
                      "s1",
                      "s2",
                      "s3"
                    ]
                  }
                },
                "s1": {
                  "entity": "Song",
                  "values": {
                    "title": "One"
                  }
                },
                "s2": {
                  "entity": "Song",
                  "values": {
                    "title": "Two"
                  }
                },
                "s3": {
                  "entity": "Song",
                  "values": {
                    "title": "Three"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "l"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "l",
                  "values": {
                    "songs": [
                      "s2",
                      "s1",
                      "s3"
                    ]
                  }
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "l",
                  "values": {
                    "songs": [
                      "s1",
                      "s3",
                      "s2"
                    ]
                  }
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "l": {
                      "name": "Mix",
                      "songs": [
                        "s1",
                        "s3",
                        "s2"
                      ]
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "l": {
                      "name": "Mix",
                      "songs": [
                        "s1",
                        "s3",
                        "s2"
                      ]
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "l": {
                      "name": "Mix",
                      "songs": [
                        "s2",
                        "s1",
                        "s3"
                      ]
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "l": {
                      "name": "Mix",
                      "songs": [
                        "s2",
                        "s1",
                        "s3"
                      ]
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "l": {
                      "name": "Mix",
                      "songs": [
                        "s1",
                        "s3",
                        "s2"
                      ]
                    }
                  }
                }
              }
            }
            """#),
        (file: "relationship-ordered-many-to-many.json", text: #"""
            {
              "name": "relationship-ordered-many-to-many",
              "description": "A post's tags are an ordered end of a many-to-many (the tags' posts are not ordered). A read the tags and swaps the first two; B swaps the last two, adds t5 (last) and saves first. Each link's place is its key at the ordered end, merged link by link like an attribute: storeTrump and objectTrump keep both swaps and the addition, overwrite writes the order A read with its swap (so t5 goes), rollback takes the store's, error fails.",
              "entities": {
                "Post": {
                  "attributes": {
                    "title": "string"
                  },
                  "relationships": {
                    "tags": {
                      "toMany": "Tag",
                      "inverse": "posts",
                      "ordered": true
                    }
                  }
                },
                "Tag": {
                  "attributes": {
                    "label": "string"
                  },
                  "relationships": {
                    "posts": {
                      "toMany": "Post",
                      "inverse": "tags"
                    }
                  }
                }
              },
              "store": {
                "p": {
                  "entity": "Post",
                  "values": {
                    "title": "Hello",
                    "tags": [
                      "t1",
                      "t2",
                      "t3",
                      "t4"
                    ]
                  }
                },
                "t1": {
                  "entity": "Tag",
                  "values": {
                    "label": "a"
                  }
                },
                "t2": {
                  "entity": "Tag",
                  "values": {
                    "label": "b"
                  }
                },
                "t3": {
                  "entity": "Tag",
                  "values": {
                    "label": "c"
                  }
                },
                "t4": {
                  "entity": "Tag",
                  "values": {
                    "label": "d"
                  }
                },
                "t5": {
                  "entity": "Tag",
                  "values": {
                    "label": "e"
                  }
                }
              },
              "steps": [
                {
                  "in": "A",
                  "do": "fetch",
                  "ref": "p"
                },
                {
                  "in": "A",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "tags": [
                      "t2",
                      "t1",
                      "t3",
                      "t4"
                    ]
                  }
                },
                {
                  "in": "B",
                  "do": "set",
                  "ref": "p",
                  "values": {
                    "tags": [
                      "t1",
                      "t2",
                      "t4",
                      "t3"
                    ]
                  }
                },
                {
                  "in": "B",
                  "do": "relate",
                  "ref": "p",
                  "relationship": "tags",
                  "add": [
                    "t5"
                  ]
                },
                {
                  "in": "B",
                  "do": "save"
                },
                {
                  "in": "A",
                  "do": "save"
                }
              ],
              "expect": {
                "error": {
                  "saves": [
                    "ok",
                    "conflict"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t1",
                        "t2",
                        "t4",
                        "t3",
                        "t5"
                      ]
                    },
                    "t1": {
                      "label": "a",
                      "posts": [
                        "p"
                      ]
                    },
                    "t2": {
                      "label": "b",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "c",
                      "posts": [
                        "p"
                      ]
                    },
                    "t4": {
                      "label": "d",
                      "posts": [
                        "p"
                      ]
                    },
                    "t5": {
                      "label": "e",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                },
                "storeTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t2",
                        "t1",
                        "t4",
                        "t3",
                        "t5"
                      ]
                    },
                    "t1": {
                      "label": "a",
                      "posts": [
                        "p"
                      ]
                    },
                    "t2": {
                      "label": "b",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "c",
                      "posts": [
                        "p"
                      ]
                    },
                    "t4": {
                      "label": "d",
                      "posts": [
                        "p"
                      ]
                    },
                    "t5": {
                      "label": "e",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                },
                "objectTrump": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t2",
                        "t1",
                        "t4",
                        "t3",
                        "t5"
                      ]
                    },
                    "t1": {
                      "label": "a",
                      "posts": [
                        "p"
                      ]
                    },
                    "t2": {
                      "label": "b",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "c",
                      "posts": [
                        "p"
                      ]
                    },
                    "t4": {
                      "label": "d",
                      "posts": [
                        "p"
                      ]
                    },
                    "t5": {
                      "label": "e",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                },
                "overwrite": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t2",
                        "t1",
                        "t3",
                        "t4"
                      ]
                    },
                    "t1": {
                      "label": "a",
                      "posts": [
                        "p"
                      ]
                    },
                    "t2": {
                      "label": "b",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "c",
                      "posts": [
                        "p"
                      ]
                    },
                    "t4": {
                      "label": "d",
                      "posts": [
                        "p"
                      ]
                    },
                    "t5": {
                      "label": "e",
                      "posts": []
                    }
                  }
                },
                "rollback": {
                  "saves": [
                    "ok",
                    "ok"
                  ],
                  "store": {
                    "p": {
                      "title": "Hello",
                      "tags": [
                        "t1",
                        "t2",
                        "t4",
                        "t3",
                        "t5"
                      ]
                    },
                    "t1": {
                      "label": "a",
                      "posts": [
                        "p"
                      ]
                    },
                    "t2": {
                      "label": "b",
                      "posts": [
                        "p"
                      ]
                    },
                    "t3": {
                      "label": "c",
                      "posts": [
                        "p"
                      ]
                    },
                    "t4": {
                      "label": "d",
                      "posts": [
                        "p"
                      ]
                    },
                    "t5": {
                      "label": "e",
                      "posts": [
                        "p"
                      ]
                    }
                  }
                }
              }
            }
            """#),
    ]
}
