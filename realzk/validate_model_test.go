package realzk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/model"
)

// modelEnsemble is the model's emulated 3-server ensemble (model.WithEnsemble) served over loopback TCP, as
// a validation run's servers: Kill is StopServer, Restart is StartServer. Its clock is virtual and nothing
// advances it here, so no session expires: the scenarios that expire sessions stay on the real ensemble.
type modelEnsemble struct {
	srv   *model.Server
	addrs []string
}

// newModelEnsemble serves a fresh 3-server model on loopback until t ends.
func newModelEnsemble(t *testing.T) *modelEnsemble {
	t.Helper()
	srv := model.NewServer(model.WithEnsemble(3))
	t.Cleanup(func() { _ = srv.Close() })
	addrs, err := srv.ListenEnsemble(3)
	if err != nil {
		t.Fatal(err)
	}
	return &modelEnsemble{srv: srv, addrs: addrs}
}

func (m *modelEnsemble) Addrs() []string { return m.addrs }

func (m *modelEnsemble) Leader(ctx context.Context) (int, error) {
	for i := range m.addrs {
		if mode, _ := m.srv.Mode(i); mode == ModeLeader {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no server of the model leads (a majority is stopped)")
}

func (m *modelEnsemble) Kill(i int) error { return m.srv.StopServer(i) }

func (m *modelEnsemble) Restart(ctx context.Context, i int) error { return m.srv.StartServer(i) }

func (m *modelEnsemble) Heal(ctx context.Context) error {
	for i := range m.addrs {
		if mode, _ := m.srv.Mode(i); mode == "stopped" {
			if err := m.srv.StartServer(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestValidateOnTheModel runs the validation scenarios that need no session expiry on the model's emulated
// ensemble, with the same clients, lock, faults and checks as on the real one: "server i stops" is the
// model's StopServer.
func TestValidateOnTheModel(t *testing.T) {
	for _, v := range []validation{
		{name: "no faults", sessionTimeout: validateShortSession, inject: func(ctx context.Context, r *validationRun) error {
			return sleep(ctx, 2*time.Second)
		}},
		{name: "leader killed and restarted", sessionTimeout: validateLongSession, inject: injectLeaderKill},
		{name: "client severed during its create", sessionTimeout: validateLongSession, proxied: true, inject: injectSeverDuringCreate},
	} {
		t.Run(v.name, func(t *testing.T) { runValidationOn(t, newModelEnsemble(t), v) })
	}
}
