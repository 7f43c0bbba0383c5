"""The one exception a user sees for bad input: it names the field, what was given and
what is allowed. The CLI prints it on one line and exits with status 2."""


class ScenarioError(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message
