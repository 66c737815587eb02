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
    ]
}
