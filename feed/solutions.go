package feed

import (
	"errors"
	"path/filepath"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
)

// ErrNoResponses is the error of a row whose single response is missing.
var ErrNoResponses = errors.New("no responses")

// Solutions turns one input row into the engine's solutions, one per
// response with IDs from firstID on: the one rule from a row to what is
// scored, for run and check alike. defaultSource is the data source of a row that has none.
// The language comes from the row's language column when it has one, and
// otherwise from the engine's options (a flag, or the fence with
// LanguageAuto). A row that cannot be scored (Row.Err, or a single
// response that is missing) still gives its responses, one when the
// response field is not a list, each with Err set: it scores 0 with that
// error and no case is run, so every response has its output. The
// responses of the row share one parsed ground truth.
func Solutions(row *rollout.Row, defaultSource string, firstID int64) []score.Solution {
	responses, bad := row.Responses, row.Err
	if len(responses) == 0 && !row.ResponseIsList {
		responses = []string{""}
		if bad == nil {
			bad = ErrNoResponses
		}
	}
	if len(responses) == 0 {
		return nil
	}
	var truth *score.Truth
	if bad == nil {
		truth = score.ParseTruthIn(row.GroundTruth, filepath.Dir(row.File))
	}
	src := row.SourceOr(defaultSource)
	sols := make([]score.Solution, len(responses))
	for j, resp := range responses {
		sols[j] = score.Solution{ID: firstID + int64(j), Completion: resp, GroundTruth: row.GroundTruth, Truth: truth,
			DataSource: src, Language: row.Language(j), Err: bad}
	}
	return sols
}
